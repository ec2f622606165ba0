// Shape inference of the tensor family: gathers, scatters, OneHot, TopK, NonZero, Unique,
// Compress, CumSum, ReverseSequence, Resize, GridSample, AffineGrid, RoiAlign, NMS.
#include "ops_shape_fixture.h"

namespace kiln {
namespace {

using namespace opstest;

std::string gather(const std::string& data, const std::string& idx, int64_t axis,
                   const char* op = "Gather") {
  OpGraph t;
  t.op(op, {t.in(data), t.in(idx)})->setAttr("axis", ai(axis));
  return t.infer();
}

TEST(OpsTensorInfer, Gather) {
  EXPECT_EQ(gather("f32[5,4,3]", "i64[]", 1), "f32[5,3]");  // scalar index drops the axis
  EXPECT_EQ(gather("f32[5,4,3]", "i64[2,7]", 0), "f32[2,7,4,3]");
  EXPECT_EQ(gather("f32[N,4,3]", "i32[K]", -1), "f32[N,4,K]");
  EXPECT_EQ(gather("f32[*]", "i64[2]", 0), "f32[*]");
  EXPECT_TRUE(contains(gather("f32[5,4]", "i64[2]", 2), "out of range"));
  EXPECT_TRUE(contains(gather("f32[5,4]", "f32[2]", 0), "must be an integer tensor"));
  EXPECT_TRUE(contains(gather("f32[]", "i64[2]", 0), "rank >= 1"));
}

TEST(OpsTensorInfer, GatherElementsAndGatherND) {
  EXPECT_EQ(gather("f32[3,4]", "i64[2,4]", 0, "GatherElements"), "f32[2,4]");
  EXPECT_TRUE(contains(gather("f32[3,4]", "i64[2]", 0, "GatherElements"), "rank 1; they must"));
  auto nd = [](const std::string& data, const std::string& idx, int64_t b) {
    OpGraph t;
    t.op("GatherND", {t.in(data), t.in(idx)})->setAttr("batch_dims", ai(b));
    return t.infer();
  };
  EXPECT_EQ(nd("f32[2,2]", "i64[2,2]", 0), "f32[2]");
  EXPECT_EQ(nd("f32[2,2]", "i64[2,1]", 0), "f32[2,2]");
  EXPECT_EQ(nd("f32[2,2,2]", "i64[2,1,2]", 0), "f32[2,1,2]");
  EXPECT_EQ(nd("f32[2,2,2]", "i64[2,1]", 1), "f32[2,2]");
  EXPECT_EQ(nd("f32[B,3,4,5]", "i64[B,7,2]", 1), "f32[B,7,5]");
  EXPECT_EQ(nd("f32[2,2]", "i64[2,?]", 0), "f32[*]");
  EXPECT_TRUE(contains(nd("f32[2,2]", "i64[2,3]", 0), "must be in [1, 2]"));
  EXPECT_TRUE(contains(nd("f32[2,2]", "i64[2,1]", 2), "batch_dims 2"));
}

TEST(OpsTensorInfer, Scatters) {
  OpGraph e;
  e.op("ScatterElements", {e.in("f32[N,4]"), e.in("i64[1,2]"), e.in("f32[1,2]")})
      ->setAttr("reduction", astr("add"));
  EXPECT_EQ(e.infer(), "f32[N,4]");
  OpGraph s;
  s.op("Scatter", {s.in("f32[3,3]"), s.in("i64[2,3]"), s.in("f32[2,3]")});
  EXPECT_EQ(s.infer(), "f32[3,3]");
  OpGraph bad;
  bad.op("ScatterElements", {bad.in("f32[3,3]"), bad.in("i64[2,3]"), bad.in("f32[2,2]")});
  EXPECT_TRUE(contains(bad.infer(), "same shape"));
  OpGraph nd;
  nd.op("ScatterND", {nd.in("f32[4,4,4]"), nd.in("i64[2,1]"), nd.in("f32[2,4,4]")});
  EXPECT_EQ(nd.infer(), "f32[4,4,4]");
  OpGraph ndBad;
  ndBad.op("ScatterND", {ndBad.in("f32[4,4,4]"), ndBad.in("i64[2,1]"), ndBad.in("f32[2,4]")});
  EXPECT_TRUE(contains(ndBad.infer(), "updates have rank 2, expected 3"));
  OpGraph red;
  red.op("ScatterND", {red.in("f32[4]"), red.in("i64[1,1]"), red.in("f32[1]")})
      ->setAttr("reduction", astr("sum"));
  EXPECT_TRUE(contains(red.infer(), "reduction 'sum'"));
}

TEST(OpsTensorInfer, OneHot) {
  auto onehot = [](const std::string& idx, std::optional<int64_t> depth, int64_t axis) {
    OpGraph t;
    Value* d = depth ? t.init(f32s({float(*depth)}, {})) : t.in("i64[]");
    t.op("OneHot", {t.in(idx), d, t.in("f32[2]")})->setAttr("axis", ai(axis));
    return t.infer();
  };
  EXPECT_EQ(onehot("i64[N,3]", 10, -1), "f32[N,3,10]");
  EXPECT_EQ(onehot("i64[N,3]", 10, 0), "f32[10,N,3]");
  EXPECT_EQ(onehot("i64[N,3]", 10, -2), "f32[N,10,3]");
  EXPECT_EQ(onehot("i64[N,3]", std::nullopt, 1), "f32[N,?,3]");
  EXPECT_TRUE(contains(onehot("i64[3]", 10, 2), "out of range"));
  EXPECT_TRUE(contains(onehot("i64[3]", -2, 0), "depth must be positive"));
}

TEST(OpsTensorInfer, TopKNonZeroUnique) {
  OpGraph k;
  k.op("TopK", {k.in("f32[N,10]"), k.init(i64s({3}))}, 2);
  ASSERT_EQ(k.run(), "");
  EXPECT_EQ(k.type(0), "f32[N,3]");
  EXPECT_EQ(k.type(1), "i64[N,3]");
  OpGraph k0;
  k0.op("TopK", {k0.in("f32[10,N]"), k0.in("i64[1]")}, 2)->setAttr("axis", ai(0));
  ASSERT_EQ(k0.run(), "");
  EXPECT_EQ(k0.type(0), "f32[<=10,N]");  // K at run time: at most the axis
  OpGraph big;
  big.op("TopK", {big.in("f32[2,4]"), big.init(i64s({5}))}, 2);
  EXPECT_TRUE(contains(big.infer(), "K (5) is larger than the axis"));
  OpGraph nz;
  nz.op("NonZero", {nz.in("f32[N,3,4]")});
  EXPECT_EQ(nz.infer(), "i64[3,?]");
  OpGraph u;
  u.op("Unique", {u.in("f32[2,6]")}, 4);
  ASSERT_EQ(u.run(), "");
  EXPECT_EQ(u.type(0), "f32[<=12]");
  EXPECT_EQ(u.type(1), "i64[<=12]");
  EXPECT_EQ(u.type(2), "i64[12]");
  EXPECT_EQ(u.type(3), "i64[<=12]");
  OpGraph ua;
  ua.op("Unique", {ua.in("f32[2,6]")}, 4)->setAttr("axis", ai(-1));
  ASSERT_EQ(ua.run(), "");
  EXPECT_EQ(ua.type(0), "f32[2,<=6]");
  EXPECT_EQ(ua.type(1), "i64[<=6]");
  EXPECT_EQ(ua.type(2), "i64[6]");
}

TEST(OpsTensorInfer, CompressCumSumReverseSequence) {
  OpGraph c;
  c.op("Compress", {c.in("f32[3,2]"), c.in("bool[3]")})->setAttr("axis", ai(0));
  EXPECT_EQ(c.infer(), "f32[<=3,2]");
  OpGraph k;
  k.op("Compress",
       {k.in("f32[3,2]"), k.init(Tensor::fromVector<uint8_t>(DType::Bool, {2}, {0, 1}))});
  EXPECT_EQ(k.infer(), "f32[1]");
  OpGraph bad;
  bad.op("Compress", {bad.in("f32[3,2]"), bad.in("bool[4]")})->setAttr("axis", ai(0));
  EXPECT_TRUE(contains(bad.infer(), "condition has 4 elements"));
  OpGraph cs;
  cs.op("CumSum", {cs.in("f64[N,5]"), cs.init(i64(1))});
  EXPECT_EQ(cs.infer(), "f64[N,5]");
  OpGraph rs;
  rs.op("ReverseSequence", {rs.in("f32[4,4]"), rs.in("i64[4]")})->setAttr("time_axis", ai(1));
  rs.node->setAttr("batch_axis", ai(0));
  EXPECT_EQ(rs.infer(), "f32[4,4]");
}

std::string resize(const std::string& x, std::optional<std::vector<float>> scales,
                   std::optional<std::vector<int64_t>> sizes,
                   std::vector<std::pair<std::string, Attribute>> attrs = {}) {
  OpGraph t;
  std::vector<Value*> ins{t.in(x), nullptr};
  ins.push_back(scales ? t.init(f32s(*scales, {int64_t(scales->size())})) : nullptr);
  if (sizes) ins.push_back(t.init(i64s(*sizes)));
  t.op("Resize", ins);
  for (auto& [k, v] : attrs) t.node->setAttr(k, v);
  return t.infer();
}

TEST(OpsTensorInfer, ResizeScalesAndSizes) {
  EXPECT_EQ(resize("f32[1,1,4,4]", std::vector<float>{1, 1, 0.6f, 0.6f}, std::nullopt),
            "f32[1,1,2,2]");
  EXPECT_EQ(resize("f32[1,1,2,2]", std::vector<float>{1, 1, 2, 3}, std::nullopt), "f32[1,1,4,6]");
  EXPECT_EQ(resize("f32[N,3,10,10]", std::vector<float>{1, 1, 0.7f, 1.7f}, std::nullopt),
            "f32[N,3,6,17]");  // floor(10 * 0.699999988) = 6
  EXPECT_EQ(resize("f32[N,3,H,W]", std::vector<float>{1, 1, 2, 2}, std::nullopt), "f32[N,3,?,?]");
  EXPECT_EQ(resize("f32[1,1,4,4]", std::nullopt, std::vector<int64_t>{1, 1, 3, 2}), "f32[1,1,3,2]");
  EXPECT_EQ(
      resize("f32[N,3,4,4]", std::nullopt, std::vector<int64_t>{3, 2}, {{"axes", ais({-2, 3})}}),
      "f32[N,3,3,2]");
  EXPECT_EQ(resize("f32[1,1,2,2]", std::vector<float>{}, std::vector<int64_t>{1, 1, 7, 8}),
            "f32[1,1,7,8]");  // empty scales placeholder
}

TEST(OpsTensorInfer, ResizeKeepAspectRatio) {
  auto keep = [](const char* policy) {
    return resize("f32[1,1,4,4]", std::nullopt, std::vector<int64_t>{7, 8},
                  {{"axes", ais({2, 3})}, {"keep_aspect_ratio_policy", astr(policy)}});
  };
  EXPECT_EQ(keep("not_larger"), "f32[1,1,7,7]");
  EXPECT_EQ(keep("not_smaller"), "f32[1,1,8,8]");
  EXPECT_EQ(keep("stretch"), "f32[1,1,7,8]");
  EXPECT_TRUE(contains(keep("fit"), "keep_aspect_ratio_policy 'fit'"));
}

TEST(OpsTensorInfer, ResizeErrorsAndUnknowns) {
  EXPECT_TRUE(contains(resize("f32[1,1,4,4]", std::vector<float>{1, 1, 2}, std::nullopt),
                       "scales has 3 values but 4 axes"));
  EXPECT_TRUE(contains(resize("f32[1,1,4,4]", std::vector<float>{1, 1, 0, 2}, std::nullopt),
                       "must be positive"));
  EXPECT_TRUE(contains(resize("f32[1,4]", std::vector<float>{1, 2}, std::vector<int64_t>{1, 8}),
                       "not both"));
  EXPECT_TRUE(contains(resize("f32[1,4]", std::nullopt, std::nullopt), "scales or sizes"));
  OpGraph u;
  u.op("Resize", {u.in("f32[N,3,8,8]"), nullptr, nullptr, u.in("i64[4]")});
  EXPECT_EQ(u.infer(), "f32[?,?,?,?]");
}

TEST(OpsTensorInfer, GridSampleAffineGridRoiAlignNms) {
  OpGraph g;
  g.op("GridSample", {g.in("f32[N,C,8,8]"), g.in("f32[N,5,6,2]")});
  EXPECT_EQ(g.infer(), "f32[N,C,5,6]");
  OpGraph gb;
  gb.op("GridSample", {gb.in("f32[1,1,8,8]"), gb.in("f32[1,5,6,3]")});
  EXPECT_TRUE(contains(gb.infer(), "grid's last dim is 3"));
  OpGraph a;
  a.op("AffineGrid", {a.in("f32[2,2,3]"), a.init(i64s({2, 3, 5, 6}))});
  EXPECT_EQ(a.infer(), "f32[2,5,6,2]");
  OpGraph r;
  r.op("RoiAlign", {r.in("f32[1,C,10,10]"), r.in("f32[R,4]"), r.in("i64[R]")})
      ->setAttr("output_height", ai(5));
  EXPECT_EQ(r.infer(), "f32[R,C,5,1]");
  OpGraph n;
  n.op("NonMaxSuppression", {n.in("f32[1,6,4]"), n.in("f32[1,1,6]")});
  EXPECT_EQ(n.infer(), "i64[<=0,3]");  // max_output_boxes_per_class defaults to 0
}

// Data-dependent sizes get a compile-time bound (docs/dynamic-shapes.md).
TEST(OpsTensorInfer, DataDependentBounds) {
  OpGraph nz;
  nz.op("NonZero", {nz.in("f32[2,3,4]")});
  EXPECT_EQ(nz.infer(), "i64[3,<=24]");
  OpGraph nzk;  // a known input folds to a static count
  nzk.op("NonZero", {nzk.init(f32s({0, 2, 0, 3}, {2, 2}))});
  EXPECT_EQ(nzk.infer(), "i64[2,2]");
  OpGraph c;  // no axis: the condition's length clipped to the element count
  c.op("Compress", {c.in("f32[3,2]"), c.in("bool[4]")});
  EXPECT_EQ(c.infer(), "f32[<=4]");
  OpGraph cs;  // a short condition bounds the axis
  cs.op("Compress", {cs.in("f32[3,5]"), cs.in("bool[2]")})->setAttr("axis", ai(-1));
  EXPECT_EQ(cs.infer(), "f32[3,<=2]");
  OpGraph cu;  // an unknown axis size and an unknown condition length: no bound
  cu.op("Compress", {cu.in("f32[N,2]"), cu.in("bool[?]")})->setAttr("axis", ai(0));
  EXPECT_EQ(cu.infer(), "f32[?,2]");
  OpGraph m;  // a known max_output_boxes_per_class, clipped to the boxes
  m.op("NonMaxSuppression", {m.in("f32[2,6,4]"), m.in("f32[2,3,6]"), m.init(i64s({2}))});
  EXPECT_EQ(m.infer(), "i64[<=12,3]");
  OpGraph mb;
  mb.op("NonMaxSuppression", {mb.in("f32[2,6,4]"), mb.in("f32[2,3,6]"), mb.init(i64s({100}))});
  EXPECT_EQ(mb.infer(), "i64[<=36,3]");
  OpGraph mr;  // run-time max: every box of every class
  mr.op("NonMaxSuppression", {mr.in("f32[1,5,4]"), mr.in("f32[1,2,5]"), mr.in("i64[1]")});
  EXPECT_EQ(mr.infer(), "i64[<=10,3]");
  OpGraph mbad;
  mbad.op("NonMaxSuppression", {mbad.in("f32[1,5,3]"), mbad.in("f32[1,2,5]")});
  EXPECT_TRUE(contains(mbad.infer(), "boxes must be [batches, boxes, 4]"));
  OpGraph t;
  t.op("TopK", {t.in("f32[3,7]"), t.in("i64[1]")}, 2);
  ASSERT_EQ(t.run(), "");
  EXPECT_EQ(t.type(0), "f32[3,<=7]");
  EXPECT_EQ(t.type(1), "i64[3,<=7]");
  OpGraph r;  // Range on run-time inputs has no bound
  r.op("Range", {r.in("f32[]"), r.in("f32[]"), r.in("f32[]")});
  EXPECT_EQ(r.infer(), "f32[runtime:v3]");
  OpGraph rh;  // ... unless --max-dim gives one
  rh.op("Range", {rh.in("f32[]"), rh.in("f32[]"), rh.in("f32[]")});
  InferOptions o;
  o.maxDims[rh.node->output(0)->name()] = 50;
  ASSERT_TRUE(inferShapes(rh.g, OpRegistry::builtin(), o, &rh.known).ok());
  EXPECT_EQ(rh.type(), "f32[<=50]");
}

}  // namespace
}  // namespace kiln
