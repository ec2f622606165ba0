// Reference evaluation (constant folding) of the shape and tensor ops: exact results on
// several dtypes, byte-moving ops on bool and string tensors, and bad inputs as errors.
#include "ops_shape_fixture.h"

namespace kiln {
namespace {

using namespace opstest;

// Builds a node over constant inputs and evaluates it.
struct Eval {
  OpGraph t;
  std::vector<Tensor> ins;
  Expected<std::vector<Tensor>> run(const std::string& op, std::vector<Tensor> inputs,
                                    std::vector<std::pair<std::string, Attribute>> attrs = {},
                                    size_t outs = 1) {
    ins = std::move(inputs);
    std::vector<Value*> vs;
    std::vector<const Tensor*> ptrs;
    for (const Tensor& x : ins) {
      vs.push_back(x.valid() ? t.init(x) : nullptr);
      ptrs.push_back(x.valid() ? &x : nullptr);
    }
    t.op(op, vs, outs);
    for (auto& [k, v] : attrs) t.node->setAttr(k, v);
    return evaluate(*t.node, ptrs);
  }
};

std::vector<int64_t> evalInts(const std::string& op, std::vector<Tensor> ins,
                              std::vector<std::pair<std::string, Attribute>> attrs = {}) {
  Eval e;
  auto r = e.run(op, std::move(ins), std::move(attrs));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
  return r.ok() ? ints((*r)[0]) : std::vector<int64_t>{};
}

Tensor iota(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = i;
  return i64s(v, dims);
}

TEST(OpsShapeEval, ShapeAndSizeFromTypeOrData) {
  OpGraph t;
  t.op("Shape", {t.in("f32[2,3,4]")})->setAttr("end", ai(-1));
  auto r = evaluate(*t.node, {nullptr});  // the driver passes null: dims come from the type
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(ints((*r)[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(evalInts("Shape", {iota({4, 5})}), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(evalInts("Size", {iota({4, 5})}), (std::vector<int64_t>{20}));
  OpGraph d;
  d.op("Shape", {d.in("f32[N]")});
  EXPECT_FALSE(evaluate(*d.node, {nullptr}).ok());
}

TEST(OpsShapeEval, ReshapeFlattenSqueezeUnsqueeze) {
  Eval e;
  auto r = e.run("Reshape", {iota({2, 3}), i64s({0, -1, 1})});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)[0].dims(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(ints((*r)[0]), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  Eval bad;
  EXPECT_FALSE(bad.run("Reshape", {iota({2, 3}), i64s({4})}).ok());
  Eval f;
  auto fl = f.run("Flatten", {iota({2, 3, 4})}, {{"axis", ai(2)}});
  ASSERT_TRUE(fl.ok());
  EXPECT_EQ((*fl)[0].dims(), (std::vector<int64_t>{6, 4}));
  Eval s;
  auto sq = s.run("Squeeze", {iota({1, 3, 1})});
  ASSERT_TRUE(sq.ok());
  EXPECT_EQ((*sq)[0].dims(), (std::vector<int64_t>{3}));
  Eval u;
  auto us = u.run("Unsqueeze", {i64(7), i64s({0, -1})});
  ASSERT_TRUE(us.ok());
  EXPECT_EQ((*us)[0].dims(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ints((*us)[0]), (std::vector<int64_t>{7}));
}

TEST(OpsShapeEval, TransposeOnSeveralDtypes) {
  EXPECT_EQ(evalInts("Transpose", {iota({2, 3})}), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(evalInts("Transpose", {iota({2, 3, 2})}, {{"perm", ais({1, 0, 2})}}),
            (std::vector<int64_t>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}));
  std::vector<uint8_t> b{1, 0, 0, 1, 1, 0};
  Eval e;
  auto r = e.run("Transpose", {Tensor::fromVector<uint8_t>(DType::Bool, {3, 2}, b)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dtype(), DType::Bool);
  EXPECT_EQ(ints((*r)[0]), (std::vector<int64_t>{1, 0, 1, 0, 1, 0}));
  Eval s;
  auto str = *Tensor::fromStrings({2, 2}, {"a", "b", "c", "d"});
  auto rs = s.run("Transpose", {str});
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ((*rs)[0].strings(), (std::vector<std::string>{"a", "c", "b", "d"}));
  Eval h;  // 2-byte elements
  auto f16 = Tensor::fromVector<uint16_t>(DType::F16, {2, 2}, {0x3c00, 0x4000, 0x4200, 0x4400});
  auto rh = h.run("Transpose", {f16});
  ASSERT_TRUE(rh.ok());
  EXPECT_EQ(doubles((*rh)[0]), (std::vector<double>{1, 3, 2, 4}));
}

TEST(OpsShapeEval, ConcatAndSplit) {
  EXPECT_EQ(evalInts("Concat", {iota({2, 1}), i64s({7, 8, 9, 10}, {2, 2})}, {{"axis", ai(1)}}),
            (std::vector<int64_t>{0, 7, 8, 1, 9, 10}));
  Eval s;
  auto strs =
      s.run("Concat", {*Tensor::fromStrings({1}, {"x"}), *Tensor::fromStrings({2}, {"y", "z"})},
            {{"axis", ai(0)}});
  ASSERT_TRUE(strs.ok());
  EXPECT_EQ((*strs)[0].strings(), (std::vector<std::string>{"x", "y", "z"}));
  Eval mixed;
  EXPECT_FALSE(mixed.run("Concat", {iota({2}), f32s({1}, {1})}, {{"axis", ai(0)}}).ok());
  Eval sp;
  auto parts = sp.run("Split", {iota({2, 5}), i64s({2, 3})}, {{"axis", ai(1)}}, 2);
  ASSERT_TRUE(parts.ok()) << parts.message();
  EXPECT_EQ(ints((*parts)[0]), (std::vector<int64_t>{0, 1, 5, 6}));
  EXPECT_EQ(ints((*parts)[1]), (std::vector<int64_t>{2, 3, 4, 7, 8, 9}));
  Eval eq;
  auto halves = eq.run("Split", {iota({4})}, {}, 2);
  ASSERT_TRUE(halves.ok());
  EXPECT_EQ(ints((*halves)[1]), (std::vector<int64_t>{2, 3}));
}

TEST(OpsShapeEval, GatherScalarNegativeAndOutOfRange) {
  EXPECT_EQ(evalInts("Gather", {i64s({10, 20, 30}), i64(-1)}), (std::vector<int64_t>{30}));
  Eval e;
  auto r = e.run("Gather", {iota({3, 2}), i64s({2, 0, 2}, {3})}, {{"axis", ai(0)}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ints((*r)[0]), (std::vector<int64_t>{4, 5, 0, 1, 4, 5}));
  EXPECT_EQ(evalInts("Gather", {iota({2, 3}), i64s({1, 0}, {1, 2})}, {{"axis", ai(-1)}}),
            (std::vector<int64_t>{1, 0, 4, 3}));
  Eval bad;
  auto err = bad.run("Gather", {i64s({1, 2}), i64(2)});
  ASSERT_FALSE(err.ok());
  EXPECT_TRUE(contains(err.message(), "index 2 is out of range"));
  OpGraph t;  // inference rejects a known out-of-range index too
  t.op("Gather", {t.in("f32[3,4]"), t.init(i64s({5}))});
  EXPECT_TRUE(contains(t.infer(), "index 5 is out of range"));
}

TEST(OpsShapeEval, SliceWithStepsAndClamping) {
  EXPECT_EQ(evalInts("Slice", {iota({10}), i64s({-1}), i64s({INT64_MIN}), Tensor(), i64s({-3})}),
            (std::vector<int64_t>{9, 6, 3, 0}));
  EXPECT_EQ(evalInts("Slice",
                     {iota({3, 4}), i64s({1, 100}), i64s({-100, 0}), i64s({1, 0}), i64s({1, -1})}),
            (std::vector<int64_t>{}));
  EXPECT_EQ(
      evalInts("Slice", {iota({3, 4}), i64s({0, 3}), i64s({100, 0}), Tensor(), i64s({2, -2})}),
      (std::vector<int64_t>{3, 1, 11, 9}));
  Eval e;
  EXPECT_FALSE(e.run("Slice", {iota({3}), i64s({0}), i64s({2}), Tensor(), i64s({0})}).ok());
}

TEST(OpsShapeEval, CastConversions) {
  auto cast = [](Tensor x, const std::string& to) {
    Eval e;
    auto r = e.run("Cast", {std::move(x)}, {{"to", astr(to)}});
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
    return r.ok() ? (*r)[0] : Tensor();
  };
  Tensor f = f32s({-2.7f, -0.5f, 0.0f, 1.9f, 300.0f}, {5});
  EXPECT_EQ(ints(cast(f, "i32")), (std::vector<int64_t>{-2, 0, 0, 1, 300}));
  EXPECT_EQ(ints(cast(f, "u8")), (std::vector<int64_t>{254, 0, 0, 1, 44}));
  EXPECT_EQ(ints(cast(f, "bool")), (std::vector<int64_t>{1, 1, 0, 1, 1}));
  EXPECT_EQ(ints(cast(i64s({-1, 256, 1LL << 40}), "i8")), (std::vector<int64_t>{-1, 0, 0}));
  EXPECT_EQ(doubles(cast(i64s({3, -4}), "f64")), (std::vector<double>{3, -4}));
  Tensor half = cast(f32s({1.0f, 0.1f, 65504.0f, 1e6f, -0.0f}, {5}), "f16");
  EXPECT_EQ(half.dtype(), DType::F16);
  const uint16_t* h = half.data<uint16_t>();
  EXPECT_EQ(h[0], 0x3c00);
  EXPECT_EQ(h[1], 0x2e66);  // 0.1 rounds to nearest even
  EXPECT_EQ(h[2], 0x7bff);
  EXPECT_EQ(h[3], 0x7c00);  // overflow → inf
  EXPECT_EQ(h[4], 0x8000);
  EXPECT_EQ(doubles(cast(half, "f32"))[1], double(0.0999755859375f));
  Tensor bf = cast(f32s({1.0f, 3.14159f}, {2}), "bf16");
  EXPECT_EQ(bf.data<uint16_t>()[0], 0x3f80);
  EXPECT_EQ(bf.data<uint16_t>()[1], 0x4049);
  Tensor b = Tensor::fromVector<uint8_t>(DType::Bool, {2}, {1, 0});
  EXPECT_EQ(doubles(cast(b, "f32")), (std::vector<double>{1, 0}));
  Eval s;
  EXPECT_FALSE(s.run("Cast", {*Tensor::fromStrings({1}, {"1"})}, {{"to", astr("f32")}}).ok());
  Eval like;
  auto r = like.run("CastLike", {f32s({2.5f}, {1}), i64s({0})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dtype(), DType::I64);
  EXPECT_EQ(ints((*r)[0]), (std::vector<int64_t>{2}));
}

TEST(OpsShapeEval, ConstantOfShapeRangeExpandTile) {
  Eval c;
  auto r = c.run("ConstantOfShape", {i64s({2, 2})}, {{"value", Attribute(i64s({5}, {1}))}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dtype(), DType::I64);
  EXPECT_EQ(ints((*r)[0]), (std::vector<int64_t>{5, 5, 5, 5}));
  Eval z;
  auto zr = z.run("ConstantOfShape", {i64s({3})});
  ASSERT_TRUE(zr.ok());
  EXPECT_EQ(doubles((*zr)[0]), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(evalInts("Range", {i64(10), i64(1), i64(-4)}), (std::vector<int64_t>{10, 6, 2}));
  Eval fr;
  auto f = fr.run("Range", {f32s({1}, {}), f32s({2}, {}), f32s({0.25f}, {})});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(doubles((*f)[0]), (std::vector<double>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(evalInts("Expand", {i64s({1, 2}, {2, 1}), i64s({2, 3})}),
            (std::vector<int64_t>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(evalInts("Tile", {i64s({1, 2}, {1, 2}), i64s({2, 2})}),
            (std::vector<int64_t>{1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(evalInts("Identity", {i64s({4, 5})}), (std::vector<int64_t>{4, 5}));
}

TEST(OpsShapeEval, PadModes) {
  Tensor x = i64s({1, 2, 3});
  auto pad = [&](const std::string& mode) {
    return evalInts("Pad", {x, i64s({2, 3})}, {{"mode", astr(mode)}});
  };
  EXPECT_EQ(pad("constant"), (std::vector<int64_t>{0, 0, 1, 2, 3, 0, 0, 0}));
  EXPECT_EQ(pad("edge"), (std::vector<int64_t>{1, 1, 1, 2, 3, 3, 3, 3}));
  EXPECT_EQ(pad("reflect"), (std::vector<int64_t>{3, 2, 1, 2, 3, 2, 1, 2}));
  EXPECT_EQ(pad("wrap"), (std::vector<int64_t>{2, 3, 1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(evalInts("Pad", {x, i64s({-1, 1}), i64(9)}), (std::vector<int64_t>{2, 3, 9}));
}

TEST(OpsShapeEval, ConstantAndEyeLikeAndDropout) {
  OpGraph c;
  c.op("Constant", {})->setAttr("value", Attribute(i64s({3, 4})));
  EXPECT_EQ(c.infer(), "i64[2]");
  ASSERT_NE(c.value(), nullptr);
  EXPECT_EQ(ints(*c.value()), (std::vector<int64_t>{3, 4}));
  OpGraph none;
  none.op("Constant", {});
  EXPECT_TRUE(contains(none.infer(), "required attribute 'value'"));
  Eval e;
  auto eye = e.run("EyeLike", {iota({2, 3})}, {{"k", ai(1)}, {"dtype", astr("f32")}});
  ASSERT_TRUE(eye.ok());
  EXPECT_EQ(doubles((*eye)[0]), (std::vector<double>{0, 1, 0, 0, 0, 1}));
  Eval d;
  auto dr = d.run("Dropout", {f32s({1, 2}, {2})}, {}, 2);
  ASSERT_TRUE(dr.ok());
  EXPECT_EQ(ints((*dr)[1]), (std::vector<int64_t>{1, 1}));
  Eval train;
  EXPECT_FALSE(train
                   .run("Dropout",
                        {f32s({1}, {1}), f32s({0.5f}, {}), Tensor::scalar<uint8_t>(DType::Bool, 1)})
                   .ok());
}

TEST(OpsShapeEval, MissingInputsAreErrorsNotCrashes) {
  OpGraph t;
  Value* x = t.init(iota({2}));
  for (const char* op : {"Reshape", "Transpose", "Concat", "Gather", "Slice", "Expand", "Tile",
                         "Cast", "Range", "Pad", "Unsqueeze", "Identity"}) {
    t.op(op, {nullptr, x});
    t.node->setAttr("to", astr("f32"));
    auto r = evaluate(*t.node, {nullptr, x->initializer()});
    EXPECT_FALSE(r.ok()) << op;
  }
}

}  // namespace
}  // namespace kiln
