// An SVG picture of an arena plan: buffers as rectangles over (op step, arena offset).
#include "kiln/memory/plan_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace kiln {
namespace {

// Plot geometry in SVG user units: room on the left for offsets, below for steps.
constexpr double kLeft = 100, kTop = 40, kPlotWidth = 800, kPlotHeight = 400;
constexpr double kWidth = kLeft + kPlotWidth + 30, kHeight = kTop + kPlotHeight + 60;
constexpr int kTicks = 4;

/// The length of the well-formed UTF-8 sequence at the start of `s` (which starts with a byte
/// >= 0x80), or 0. Overlong forms, surrogates and code points past U+10FFFF are ill-formed.
size_t utf8SequenceLength(std::string_view s, char32_t* codePoint) {
  auto byte = [&](size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  unsigned lead = byte(0);
  size_t length;
  unsigned low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  char32_t cp = lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    unsigned b = byte(i);
    if (i == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xBF)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  *codePoint = cp;
  return length;
}

std::string num(double v) {
  return fmt::format("{:.2f}", v);
}

}  // namespace

std::string escapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        default:
          // XML 1.0 forbids most C0 controls outright; the rest would only garble a tooltip.
          if (c >= 0x20 && c != 0x7F) out.push_back(char(c));
      }
      continue;
    }
    char32_t cp = 0;
    size_t length = utf8SequenceLength(text.substr(i), &cp);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD: an SVG with invalid UTF-8 is not XML at all
      ++i;
      continue;
    }
    // C1 controls and the noncharacters U+FFFE/U+FFFF are dropped like the C0 controls.
    bool control = cp <= 0x9F || cp == 0xFFFE || cp == 0xFFFF;
    if (!control) out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

std::string planToSvg(std::span<const BufferRequest> requests, const ArenaPlan& plan,
                      std::span<const std::string> labels) {
  // What can be drawn: requests with an offset, a size and a non-empty lifetime.
  auto drawable = [&](size_t i) {
    const BufferRequest& r = requests[i];
    return i < plan.offsets.size() && plan.offsets[i] >= 0 && r.bytes >= 0 &&
           r.firstStep <= r.lastStep;
  };
  int64_t minStep = std::numeric_limits<int64_t>::max();
  int64_t maxStep = std::numeric_limits<int64_t>::min();
  // Doubles: the picture needs proportions, and offset + bytes may exceed int64 in a bad plan.
  double top = std::max<double>({double(plan.arenaBytes), double(plan.lowerBoundBytes), 1.0});
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!drawable(i)) continue;
    minStep = std::min(minStep, requests[i].firstStep);
    maxStep = std::max(maxStep, requests[i].lastStep);
    top = std::max(top, double(plan.offsets[i]) + double(requests[i].bytes));
  }
  if (minStep > maxStep) minStep = maxStep = 0;
  const double steps = double(maxStep) - double(minStep) + 1;
  auto xOf = [&](double step) { return kLeft + (step - double(minStep)) / steps * kPlotWidth; };
  auto yOf = [&](double offset) { return kTop + kPlotHeight - offset / top * kPlotHeight; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      num(kWidth), num(kHeight));
  svg += fmt::format(
      "<text x=\"{}\" y=\"20\" font-size=\"14\">{}: arena {} bytes, lower bound {} "
      "bytes</text>\n",
      num(kLeft), escapeXml(plan.planner), plan.arenaBytes, plan.lowerBoundBytes);

  for (size_t i = 0; i < requests.size(); ++i) {
    if (!drawable(i)) continue;
    const BufferRequest& r = requests[i];
    double offset = double(plan.offsets[i]);
    double x = xOf(double(r.firstStep)), right = xOf(double(r.lastStep) + 1);
    double y = yOf(offset + double(r.bytes));
    // Empty and tiny buffers still get a sliver, so that every one can be hovered.
    double height = std::max(yOf(offset) - y, 0.5);
    std::string label = i < labels.size() ? escapeXml(labels[i]) : fmt::format("buffer {}", i);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"hsl({}, 60%, 70%)\" "
        "stroke=\"#333\" stroke-width=\"0.5\"><title>{}: {} bytes at offset {}, steps {}-{}"
        "</title></rect>\n",
        num(x), num(y), num(right - x), num(height), i * 137 % 360, label, r.bytes, plan.offsets[i],
        r.firstStep, r.lastStep);
  }

  // Axes, ticks (integers, spread evenly over each axis) and their labels.
  const double axisY = kTop + kPlotHeight;
  svg += fmt::format("<path d=\"M {0} {1} V {2} H {3}\" fill=\"none\" stroke=\"black\"/>\n",
                     num(kLeft), num(kTop), num(axisY), num(kLeft + kPlotWidth));
  __extension__ typedef __int128 Wide;
  for (int k = 0; k <= kTicks; ++k) {
    int64_t step = int64_t(Wide(minStep) + (Wide(maxStep) - Wide(minStep)) * k / kTicks);
    double x = (xOf(double(step)) + xOf(double(step) + 1)) / 2;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(x),
                       num(axisY + 16), step);
    int64_t offset = int64_t(top * k / kTicks);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", num(kLeft - 6),
                       num(yOf(double(offset)) + 4), offset);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">op step</text>\n",
                     num(kLeft + kPlotWidth / 2), num(axisY + 40));
  svg += fmt::format(
      "<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">"
      "arena offset (bytes)</text>\n",
      num(kTop + kPlotHeight / 2));

  const double boundY = yOf(double(plan.lowerBoundBytes));
  svg += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#c00\" "
      "stroke-dasharray=\"6 4\"><title>lower bound: {3} bytes</title></line>\n",
      num(kLeft), num(boundY), num(kLeft + kPlotWidth), plan.lowerBoundBytes);
  svg +=
      fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#c00\" text-anchor=\"end\">lower bound</text>\n",
                  num(kLeft + kPlotWidth), num(boundY - 4));
  svg += "</svg>\n";
  return svg;
}

}  // namespace kiln
