// The SVG picture of an arena plan: escaping of untrusted labels, and what the picture shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kiln/memory/plan.h"
#include "kiln/memory/plan_svg.h"

namespace kiln {
namespace {

TEST(PlanSvg, EscapesHostileLabels) {
  EXPECT_EQ(escapeXml("a\"<b>&'\n*/"), "a&quot;&lt;b&gt;&amp;&apos;*/");
  EXPECT_EQ(escapeXml("tab\there\x7f"), "tabhere");
  EXPECT_EQ(escapeXml("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");  // kept
  EXPECT_EQ(escapeXml("\xc2\x85"), "");                                          // C1 control
  EXPECT_EQ(escapeXml("x\xff"
                      "y"),
            "x\xef\xbf\xbdy");                                                   // invalid byte
  EXPECT_EQ(escapeXml("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong '/'
  EXPECT_EQ(escapeXml("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(escapeXml("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");                  // truncated
}

TEST(PlanSvg, DrawsEveryBufferAndTheLowerBound) {
  std::vector<BufferRequest> r = {{100, 0, 1}, {100, 1, 2}, {100, 2, 3}, {0, 1, 1}};
  auto plan = planArenaBest(r, 64);
  ASSERT_TRUE(plan.ok()) << plan.message();
  std::vector<std::string> labels = {"a\"<b>&'\n*/", "conv1/out", "x]]><script>"};
  std::string svg = planToSvg(r, *plan, labels);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1))
    ++rects;
  EXPECT_EQ(rects, r.size());
  EXPECT_NE(svg.find("<title>a&quot;&lt;b&gt;&amp;&apos;*/: 100 bytes at offset"),
            std::string::npos)
      << svg;
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("a\"<b>"), std::string::npos);
  EXPECT_NE(svg.find("buffer 3: 0 bytes"), std::string::npos);  // no label given
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find("lower bound: 256 bytes"), std::string::npos);
  EXPECT_NE(svg.find(">op step<"), std::string::npos);
  EXPECT_NE(svg.find(">arena offset (bytes)<"), std::string::npos);
  EXPECT_EQ(planToSvg(r, *plan, labels), svg);  // deterministic
  // Escaped labels add no markup and no line breaks: every line is one element.
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<'), std::count(svg.begin(), svg.end(), '>'));
  for (size_t line = 0; line < svg.size(); line = svg.find('\n', line) + 1)
    EXPECT_EQ(svg[line], '<') << svg.substr(line, 40);

  // A plan that lacks offsets, and an empty one, still give a picture.
  ArenaPlan partial = *plan;
  partial.offsets.resize(1);
  std::string fewer = planToSvg(r, partial, {});
  EXPECT_NE(fewer.find("buffer 0:"), std::string::npos);
  EXPECT_EQ(fewer.find("buffer 1:"), std::string::npos);
  EXPECT_NE(planToSvg({}, ArenaPlan{}, {}).find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace kiln
