// Type inference of the misc family: random generators, signal ops (DFT, STFT, windows,
// MelWeightMatrix) and linear quantization.
#include "ops_shape_fixture.h"

namespace kiln {
namespace {

using namespace opstest;

TEST(OpsMiscRandom, ShapesAndDtypes) {
  OpGraph n;
  n.op("RandomNormal", {})->setAttr("shape", ais({2, 3}));
  EXPECT_EQ(n.infer(), "f32[2,3]");
  OpGraph u;
  u.op("RandomUniform", {})->setAttr("shape", ais({4}));
  u.node->setAttr("dtype", astr("f64"));
  EXPECT_EQ(u.infer(), "f64[4]");
  OpGraph bad;
  bad.op("RandomUniform", {})->setAttr("shape", ais({4}));
  bad.node->setAttr("dtype", astr("i32"));
  EXPECT_TRUE(contains(bad.infer(), "must be a float type"));
  OpGraph missing;
  missing.op("RandomNormal", {});
  EXPECT_TRUE(contains(missing.infer(), "required attribute 'shape'"));
  OpGraph like;
  like.op("RandomNormalLike", {like.in("f16[N,2]")});
  EXPECT_EQ(like.infer(), "f16[N,2]");
  OpGraph b;
  b.op("Bernoulli", {b.in("f32[N,2]")})->setAttr("dtype", astr("bool"));
  EXPECT_EQ(b.infer(), "bool[N,2]");
  OpGraph m;
  m.op("Multinomial", {m.in("f32[B,10]")})->setAttr("sample_size", ai(5));
  EXPECT_EQ(m.infer(), "i32[B,5]");
}

TEST(OpsMiscSignal, Dft) {
  auto dft = [](const std::string& x, std::optional<int64_t> axis, std::optional<int64_t> len,
                int64_t onesided = 0) {
    OpGraph t;
    std::vector<Value*> ins{t.in(x)};
    ins.push_back(len ? t.init(i64(*len)) : nullptr);
    if (axis) ins.push_back(t.init(i64(*axis)));
    t.op("DFT", ins)->setAttr("onesided", ai(onesided));
    return t.infer();
  };
  EXPECT_EQ(dft("f32[1,10,10,1]", 1, std::nullopt), "f32[1,10,10,2]");
  EXPECT_EQ(dft("f32[1,10,10,2]", 2, std::nullopt), "f32[1,10,10,2]");
  EXPECT_EQ(dft("f32[1,10,1]", std::nullopt, std::nullopt, 1), "f32[1,6,2]");
  EXPECT_EQ(dft("f32[B,16,1]", -2, 9, 1), "f32[B,5,2]");
  EXPECT_EQ(dft("f32[B,16,1]", 1, 20), "f32[B,20,2]");
  EXPECT_TRUE(contains(dft("f32[2,16,3]", 1, std::nullopt), "last dim must be 1"));
  EXPECT_TRUE(contains(dft("f32[2,16,2]", 2, std::nullopt), "must name a signal dim"));
}

TEST(OpsMiscSignal, StftWindowsMel) {
  OpGraph s;
  s.op("STFT", {s.in("f32[1,128,1]"), s.init(i64(8)), nullptr, s.init(i64(16))});
  EXPECT_EQ(s.infer(), "f32[1,15,9,2]");
  OpGraph w;
  w.op("STFT", {w.in("f32[2,128,1]"), w.init(i64(8)), w.in("f32[16]")})->setAttr("onesided", ai(0));
  EXPECT_EQ(w.infer(), "f32[2,15,16,2]");
  OpGraph h;
  h.op("HannWindow", {h.init(i64(10))});
  EXPECT_EQ(h.infer(), "f32[10]");
  OpGraph hd;
  hd.op("BlackmanWindow", {hd.in("i64[]")})->setAttr("output_datatype", astr("f64"));
  EXPECT_EQ(hd.infer(), "f64[?]");
  OpGraph m;
  m.op("MelWeightMatrix", {m.init(i64(8)), m.init(i64(16)), m.init(i64(8192)),
                           m.init(f32s({0}, {})), m.init(f32s({4096}, {}))});
  EXPECT_EQ(m.infer(), "f32[9,8]");
}

TEST(OpsMiscQuantize, QuantizeDequantize) {
  OpGraph q;
  q.op("QuantizeLinear", {q.in("f32[N,3]"), q.in("f32[]")});
  EXPECT_EQ(q.infer(), "u8[N,3]");
  OpGraph z;
  z.op("QuantizeLinear", {z.in("f32[N,3]"), z.in("f32[3]"), z.in("i8[3]")});
  EXPECT_EQ(z.infer(), "i8[N,3]");
  OpGraph o;
  o.op("QuantizeLinear", {o.in("f32[2,3]"), o.in("f32[1]")})->setAttr("output_dtype", astr("i8"));
  EXPECT_EQ(o.infer(), "i8[2,3]");
  OpGraph axis;
  axis.op("QuantizeLinear", {axis.in("f32[2,3]"), axis.in("f32[2]")})->setAttr("axis", ai(0));
  EXPECT_EQ(axis.infer(), "u8[2,3]");
  OpGraph badAxis;
  badAxis.op("QuantizeLinear", {badAxis.in("f32[2,3]"), badAxis.in("f32[2]")});
  EXPECT_TRUE(contains(badAxis.infer(), "per-axis scale has 2 elements but axis 1 has 3"));
  OpGraph d;
  d.op("DequantizeLinear", {d.in("i8[N,4]"), d.in("f32[]"), d.in("i8[]")});
  EXPECT_EQ(d.infer(), "f32[N,4]");
  OpGraph dz;
  dz.op("DequantizeLinear", {dz.in("i8[4]"), dz.in("f32[]"), dz.in("u8[]")});
  EXPECT_TRUE(contains(dz.infer(), "zero point is u8 but the input is i8"));
  OpGraph dyn;
  dyn.op("DynamicQuantizeLinear", {dyn.in("f32[N,4]")}, 3);
  ASSERT_EQ(dyn.run(), "");
  EXPECT_EQ(dyn.type(0) + " " + dyn.type(1) + " " + dyn.type(2), "u8[N,4] f32[] u8[]");
}

}  // namespace
}  // namespace kiln
