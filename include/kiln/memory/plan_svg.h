// An SVG picture of an arena plan, for reports and for seeing why an arena is as big as it is.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kiln/memory/plan.h"

namespace kiln {

/// Draws `plan` for `requests`: x is the op step, y the arena offset (0 at the bottom), one
/// rectangle per buffer whose hover title gives its label, size, offset and steps; a dashed
/// line marks the lower bound. labels[i] names request i ("buffer i" where labels is short);
/// labels may come from untrusted model files, so they are XML-escaped, control characters and
/// invalid UTF-8 are dropped or replaced. Requests without an offset in the plan, or malformed
/// ones, are not drawn. Deterministic: the same inputs give the same bytes.
std::string planToSvg(std::span<const BufferRequest> requests, const ArenaPlan& plan,
                      std::span<const std::string> labels);

/// `text` made safe inside XML character data and attribute values: & < > " ' as entities,
/// control characters dropped, invalid UTF-8 replaced by U+FFFD.
std::string escapeXml(std::string_view text);

}  // namespace kiln
