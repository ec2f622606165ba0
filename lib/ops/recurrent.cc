// Recurrent layers RNN, GRU and LSTM: output shapes from X, W/R and the layout/direction.
#include "dim_math.h"
#include "family_registration.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;

// kGates: 1 (RNN), 3 (GRU), 4 (LSTM): rows of W and R per direction are kGates * hidden.
template <int kGates>
struct RecurrentOp {
  static constexpr std::string_view kName = kGates == 1 ? "RNN" : kGates == 3 ? "GRU" : "LSTM";
  static constexpr int kMaxInputs = kGates == 4 ? 8 : 6;
  static constexpr int kMaxOutputs = kGates == 4 ? 3 : 2;
  static OpSchema schema() {
    OpSchema s{3,
               kMaxInputs,
               0,
               kMaxOutputs,
               {{"activation_alpha", AttrKind::Floats},
                {"activation_beta", AttrKind::Floats},
                {"activations", AttrKind::Strings},
                {"clip", AttrKind::Float},
                {"direction", AttrKind::String},
                {"hidden_size", AttrKind::Int},
                {"layout", AttrKind::Int}}};
    if (kGates == 3) s.attrs.push_back({"linear_before_reset", AttrKind::Int});
    if (kGates == 4) s.attrs.push_back({"input_forget", AttrKind::Int});
    return s;
  }
  static Types inferTypes(const InferContext& ctx) {
    const Node& n = ctx.node();
    const TensorType& x = ctx.in(0);
    std::string dir = n.attrString("direction", "forward");
    if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
      return ctx.error("direction '{}' is not one of forward, reverse, bidirectional", dir);
    const int64_t layout = n.attrInt("layout", 0);
    if (layout != 0 && layout != 1) return ctx.error("layout must be 0 or 1, got {}", layout);
    for (size_t i = 1; i < 3; ++i)
      if (ctx.in(i).shape.rankKnown() && ctx.in(i).shape.rank() != 3)
        return ctx.error("input {} ({}) must be 3-D, got {}", i, i == 1 ? "W" : "R",
                         toString(ctx.in(i).shape));
    if (x.shape.rankKnown() && x.shape.rank() != 3)
      return ctx.error("X must be 3-D, got {}", toString(x.shape));
    Dim numDir = Dim::known(dir == "bidirectional" ? 2 : 1);
    Dim hidden = Dim::unknown();
    if (n.hasAttr("hidden_size")) {
      int64_t h = n.attrInt("hidden_size", 0);
      if (h < 1) return ctx.error("hidden_size must be >= 1, got {}", h);
      hidden = Dim::known(h);
    } else if (ctx.in(2).shape.rankKnown()) {
      hidden = ctx.in(2).shape[2];
    }
    Dim seq = Dim::unknown(), batch = Dim::unknown();
    if (x.shape.rankKnown()) {
      seq = x.shape[size_t(layout)];
      batch = x.shape[size_t(1 - layout)];
    }
    Shape y =
        layout == 0 ? Shape({seq, numDir, batch, hidden}) : Shape({batch, seq, numDir, hidden});
    Shape state = layout == 0 ? Shape({numDir, batch, hidden}) : Shape({batch, numDir, hidden});
    std::vector<TensorType> out{{x.dtype, y}, {x.dtype, state}};
    if (kGates == 4) out.push_back({x.dtype, state});
    return out;
  }
};

}  // namespace

void registerRecurrentOps(OpRegistry& r) {
  addIfAbsent<RecurrentOp<1>>(r);
  addIfAbsent<RecurrentOp<3>>(r);
  addIfAbsent<RecurrentOp<4>>(r);
}

}  // namespace kiln
