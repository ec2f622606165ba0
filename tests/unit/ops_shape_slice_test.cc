// Shape inference of Concat, Split, Slice, Tile, Pad, DepthToSpace/SpaceToDepth,
// ConstantOfShape, Range, EyeLike, Trilu, Dropout, Cast and CastLike.
#include "ops_shape_fixture.h"

namespace kiln {
namespace {

using namespace opstest;

std::string concat(const std::vector<std::string>& ins, int64_t axis) {
  OpGraph t;
  std::vector<Value*> vs;
  for (const auto& s : ins) vs.push_back(t.in(s));
  t.op("Concat", vs)->setAttr("axis", ai(axis));
  return t.infer();
}

TEST(OpsShapeSlice, Concat) {
  EXPECT_EQ(concat({"f32[2,3]", "f32[4,3]"}, 0), "f32[6,3]");
  EXPECT_EQ(concat({"f32[2,3]", "f32[2,5]"}, -1), "f32[2,8]");
  EXPECT_EQ(concat({"f32[N,3]", "f32[N,5]"}, 1), "f32[N,8]");
  EXPECT_EQ(concat({"f32[N,3]", "f32[M,3]"}, 0), "f32[?,3]");
  EXPECT_EQ(concat({"f32[N,3]", "f32[0,3]"}, 0), "f32[N,3]");
  EXPECT_EQ(concat({"f32[N,3]", "f32[2,3]"}, 1), "f32[2,6]");  // N must equal 2
  EXPECT_EQ(concat({"f32[*]", "f32[2,3]"}, 1), "f32[2,?]");
  EXPECT_EQ(concat({"f32[*]", "f32[*]"}, 0), "f32[*]");
  EXPECT_TRUE(contains(concat({"f32[2,3]", "f32[2,3,1]"}, 0), "equal ranks"));
  EXPECT_TRUE(contains(concat({"f32[2,3]", "f32[4,4]"}, 0), "only axis 0 may differ"));
  EXPECT_TRUE(contains(concat({"f32[2,3]", "i64[2,3]"}, 0), "one element type"));
  EXPECT_TRUE(contains(concat({"f32[2,3]"}, 2), "out of range"));
  OpGraph missing;
  missing.op("Concat", {missing.in("f32[2]")});
  EXPECT_TRUE(contains(missing.infer(), "required attribute 'axis'"));
}

std::vector<std::string> split(const std::string& in, size_t outs, int64_t axis,
                               std::optional<std::vector<int64_t>> sizes,
                               std::optional<int64_t> numOutputs = std::nullopt) {
  OpGraph t;
  std::vector<Value*> vs{t.in(in)};
  if (sizes) vs.push_back(t.init(i64s(*sizes)));
  t.op("Split", vs, outs)->setAttr("axis", ai(axis));
  if (numOutputs) t.node->setAttr("num_outputs", ai(*numOutputs));
  std::string err = t.run();
  if (!err.empty()) return {"error: " + err};
  std::vector<std::string> r;
  for (size_t i = 0; i < outs; ++i) r.push_back(t.type(i));
  return r;
}

TEST(OpsShapeSlice, SplitVariants) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split("f32[6,4]", 3, 0, std::nullopt), (V{"f32[2,4]", "f32[2,4]", "f32[2,4]"}));
  EXPECT_EQ(split("f32[6,4]", 2, -1, std::vector<int64_t>{1, 3}), (V{"f32[6,1]", "f32[6,3]"}));
  EXPECT_EQ(split("f32[7]", 3, 0, std::nullopt, 3), (V{"f32[3]", "f32[3]", "f32[1]"}));
  EXPECT_EQ(split("f32[8]", 4, 0, std::nullopt, 4), (V{"f32[2]", "f32[2]", "f32[2]", "f32[2]"}));
  EXPECT_EQ(split("f32[N,4]", 2, 0, std::nullopt), (V{"f32[?,4]", "f32[?,4]"}));
  EXPECT_EQ(split("f32[N,4]", 2, 0, std::vector<int64_t>{1, 2}), (V{"f32[1,4]", "f32[2,4]"}));
  EXPECT_TRUE(contains(split("f32[7]", 2, 0, std::nullopt)[0], "does not split evenly"));
  EXPECT_TRUE(contains(split("f32[6]", 2, 0, std::vector<int64_t>{2, 3})[0], "add up to 5"));
  EXPECT_TRUE(contains(split("f32[6]", 2, 0, std::vector<int64_t>{6})[0], "1 sizes for 2"));
  EXPECT_TRUE(contains(split("f32[6]", 2, 0, std::nullopt, 3)[0], "num_outputs is 3"));
  EXPECT_TRUE(contains(split("f32[5]", 4, 0, std::nullopt, 4)[0], "cannot split 5"));
  OpGraph u;
  u.op("Split", {u.in("f32[6,2]"), u.in("i64[2]")}, 2);
  ASSERT_EQ(u.run(), "");
  EXPECT_EQ(u.type(1), "f32[?,2]");
}

std::string slice(const std::string& in, std::vector<int64_t> starts, std::vector<int64_t> ends,
                  std::optional<std::vector<int64_t>> axes = std::nullopt,
                  std::optional<std::vector<int64_t>> steps = std::nullopt) {
  OpGraph t;
  std::vector<Value*> vs{t.in(in), t.init(i64s(starts)), t.init(i64s(ends))};
  vs.push_back(axes ? t.init(i64s(*axes)) : nullptr);
  if (steps) vs.push_back(t.init(i64s(*steps)));
  t.op("Slice", vs);
  return t.infer();
}

TEST(OpsShapeSlice, SliceBasicsAndClamping) {
  EXPECT_EQ(slice("f32[20,10,5]", {0, 0}, {3, 10}), "f32[3,10,5]");
  EXPECT_EQ(slice("f32[20,10,5]", {1}, {1000}, std::vector<int64_t>{1}), "f32[20,9,5]");
  EXPECT_EQ(slice("f32[20,10,5]", {-3}, {-1}, std::vector<int64_t>{-2}), "f32[20,2,5]");
  EXPECT_EQ(slice("f32[20,10,5]", {-100}, {3}, std::vector<int64_t>{0}), "f32[3,10,5]");
  EXPECT_EQ(slice("f32[20,10,5]", {15}, {5}, std::vector<int64_t>{0}), "f32[0,10,5]");
  EXPECT_EQ(slice("f32[20,10,5]", {0}, {10}, std::vector<int64_t>{1}, std::vector<int64_t>{3}),
            "f32[20,4,5]");
  EXPECT_EQ(slice("f32[10]", {INT64_MIN}, {INT64_MAX}), "f32[10]");
}

TEST(OpsShapeSlice, SliceNegativeSteps) {
  EXPECT_EQ(slice("f32[10]", {-1}, {INT64_MIN}, std::nullopt, std::vector<int64_t>{-1}), "f32[10]");
  EXPECT_EQ(slice("f32[10]", {20}, {0}, std::nullopt, std::vector<int64_t>{-1}), "f32[9]");
  EXPECT_EQ(slice("f32[10]", {8}, {1}, std::nullopt, std::vector<int64_t>{-3}), "f32[3]");
  EXPECT_EQ(slice("f32[10]", {1}, {8}, std::nullopt, std::vector<int64_t>{-1}), "f32[0]");
  EXPECT_EQ(slice("f32[10]", {5}, {-100}, std::nullopt, std::vector<int64_t>{INT64_MIN}), "f32[1]");
  EXPECT_EQ(slice("f32[0]", {-1}, {INT64_MIN}, std::nullopt, std::vector<int64_t>{-1}), "f32[0]");
}

TEST(OpsShapeSlice, SliceSymbolicAndUnknown) {
  EXPECT_EQ(slice("f32[N,10]", {1}, {3}, std::vector<int64_t>{1}), "f32[N,2]");
  EXPECT_EQ(slice("f32[N,10]", {0}, {INT64_MAX}), "f32[N,10]");
  EXPECT_EQ(slice("f32[N,10]", {1}, {INT64_MAX}), "f32[?,10]");
  EXPECT_EQ(slice("f32[N,10]", {-1}, {INT64_MIN}, std::nullopt, std::vector<int64_t>{-1}),
            "f32[N,10]");
  OpGraph t;  // starts unknown: only the sliced axis is unknown
  t.op("Slice", {t.in("f32[4,10]"), t.in("i64[1]"), t.in("i64[1]"), t.init(i64s({1}))});
  EXPECT_EQ(t.infer(), "f32[4,?]");
  OpGraph a;  // axes unknown: any axis may be sliced
  a.op("Slice", {a.in("f32[4,10]"), a.init(i64s({0})), a.init(i64s({1})), a.in("i64[1]")});
  EXPECT_EQ(a.infer(), "f32[?,?]");
}

TEST(OpsShapeSlice, SliceErrors) {
  EXPECT_TRUE(
      contains(slice("f32[10]", {0}, {5}, std::nullopt, std::vector<int64_t>{0}), "steps[0] is 0"));
  EXPECT_TRUE(
      contains(slice("f32[10,2]", {0, 0}, {5, 1}, std::vector<int64_t>{0, -2}), "repeated"));
  EXPECT_TRUE(contains(slice("f32[10]", {0}, {5}, std::vector<int64_t>{1}), "out of range"));
  EXPECT_TRUE(contains(slice("f32[10]", {0, 0}, {5}), "equal lengths"));
}

TEST(OpsShapeSlice, Tile) {
  OpGraph t;
  t.op("Tile", {t.in("f32[2,N,3]"), t.init(i64s({3, 1, 0}))});
  EXPECT_EQ(t.infer(), "f32[6,N,0]");
  OpGraph bad;
  bad.op("Tile", {bad.in("f32[2,3]"), bad.init(i64s({2}))});
  EXPECT_TRUE(contains(bad.infer(), "repeats has 1 entries but the input has rank 2"));
  OpGraph u;
  u.op("Tile", {u.in("f32[2,3]"), u.in("i64[2]")});
  EXPECT_EQ(u.infer(), "f32[?,?]");
}

std::string pad(const std::string& in, std::vector<int64_t> pads,
                std::optional<std::vector<int64_t>> axes = std::nullopt,
                const std::string& mode = "constant") {
  OpGraph t;
  std::vector<Value*> vs{t.in(in), t.init(i64s(pads))};
  if (axes) vs.insert(vs.end(), {nullptr, t.init(i64s(*axes))});
  t.op("Pad", vs)->setAttr("mode", astr(mode));
  return t.infer();
}

TEST(OpsShapeSlice, Pad) {
  EXPECT_EQ(pad("f32[1,3,4,5]", {0, 0, 1, 2, 0, 0, 3, 4}), "f32[1,3,8,11]");
  EXPECT_EQ(pad("f32[N,3,4,5]", {0, 0, 1, 2, 0, 0, 3, 4}, std::nullopt, "reflect"),
            "f32[N,3,8,11]");
  EXPECT_EQ(pad("f32[N,3,4,5]", {1, 0, 0, 0, 0, 0, 0, 0}, std::nullopt, "edge"), "f32[?,3,4,5]");
  EXPECT_EQ(pad("f32[2,3,4]", {1, -1, 2, -1}, std::vector<int64_t>{-1, 1}, "wrap"), "f32[2,1,7]");
  EXPECT_TRUE(contains(pad("f32[2,3]", {1, 1}), "expected 2 per padded axis"));
  EXPECT_TRUE(contains(pad("f32[2,3]", {0, -2, 0, -2}), "leave no valid size"));
  EXPECT_TRUE(contains(pad("f32[2]", {1, 1}, std::nullopt, "mirror"), "mode 'mirror'"));
  OpGraph u;
  u.op("Pad", {u.in("f32[2,3]"), u.in("i64[4]")});
  EXPECT_EQ(u.infer(), "f32[?,?]");
}

TEST(OpsShapeSlice, DepthToSpaceAndSpaceToDepth) {
  OpGraph d;
  d.op("DepthToSpace", {d.in("f32[N,8,H,3]")})->setAttr("blocksize", ai(2));
  EXPECT_EQ(d.infer(), "f32[N,2,?,6]");
  OpGraph s;
  s.op("SpaceToDepth", {s.in("f32[1,3,4,6]")})->setAttr("blocksize", ai(2));
  EXPECT_EQ(s.infer(), "f32[1,12,2,3]");
  OpGraph bad;
  bad.op("DepthToSpace", {bad.in("f32[1,6,2,2]")})->setAttr("blocksize", ai(2));
  EXPECT_TRUE(contains(bad.infer(), "channels (6) is not divisible by 4"));
}

TEST(OpsShapeSlice, ConstantOfShapeAndRange) {
  OpGraph c;
  c.op("ConstantOfShape", {c.init(i64s({2, 3}))});
  EXPECT_EQ(c.infer(), "f32[2,3]");
  OpGraph v;
  v.op("ConstantOfShape", {v.in("i64[3]")})->setAttr("value", Attribute(i64s({7}, {1})));
  EXPECT_EQ(v.infer(), "i64[?,?,?]");
  OpGraph neg;
  neg.op("ConstantOfShape", {neg.init(i64s({2, -1}))});
  EXPECT_TRUE(contains(neg.infer(), "negative"));
  OpGraph r;
  r.op("Range", {r.init(f32s({1}, {})), r.init(f32s({2}, {})), r.init(f32s({0.3f}, {}))});
  EXPECT_EQ(r.infer(), "f32[4]");
  OpGraph d;
  d.op("Range", {d.init(i64(10)), d.init(i64(4)), d.init(i64(-3))});
  EXPECT_EQ(d.infer(), "i64[2]");
  OpGraph u;
  u.op("Range", {u.in("i64[]"), u.init(i64(4)), u.init(i64(1))});
  EXPECT_EQ(u.infer(), "i64[runtime:v3]");
  OpGraph z;
  z.op("Range", {z.init(i64(0)), z.init(i64(4)), z.init(i64(0))});
  EXPECT_TRUE(contains(z.infer(), "delta is 0"));
}

TEST(OpsShapeSlice, EyeLikeTriluDropout) {
  OpGraph e;
  e.op("EyeLike", {e.in("i32[N,4]")})->setAttr("dtype", astr("f64"));
  EXPECT_EQ(e.infer(), "f64[N,4]");
  OpGraph e3;
  e3.op("EyeLike", {e3.in("f32[2,2,2]")});
  EXPECT_TRUE(contains(e3.infer(), "must be 2-D"));
  OpGraph t;
  t.op("Trilu", {t.in("f32[B,3,4]"), t.init(i64(1))});
  EXPECT_EQ(t.infer(), "f32[B,3,4]");
  OpGraph d;
  d.op("Dropout", {d.in("f16[N,8]")}, 2);
  ASSERT_EQ(d.run(), "");
  EXPECT_EQ(d.type(0), "f16[N,8]");
  EXPECT_EQ(d.type(1), "bool[N,8]");
}

TEST(OpsShapeSlice, CastAndCastLike) {
  OpGraph c;
  c.op("Cast", {c.in("f32[N,3]")})->setAttr("to", astr("i64"));
  EXPECT_EQ(c.infer(), "i64[N,3]");
  OpGraph bad;
  bad.op("Cast", {bad.in("f32[3]")})->setAttr("to", astr("float"));
  EXPECT_TRUE(contains(bad.infer(), "unknown dtype 'float'"));
  OpGraph num;
  num.op("Cast", {num.in("f32[3]")})->setAttr("to", ai(7));
  EXPECT_TRUE(contains(num.infer(), "attribute 'to' is int, expected string"));
  OpGraph l;
  l.op("CastLike", {l.in("f32[2]"), l.in("f16[]")});
  EXPECT_EQ(l.infer(), "f16[2]");
}

}  // namespace
}  // namespace kiln
