// Shape inference of Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand and
// the Shape→Gather→Concat→Reshape chain resolving to static shapes.
#include "ops_shape_fixture.h"

namespace kiln {
namespace {

using namespace opstest;

TEST(OpsShapeInfer, ShapeAndSize) {
  OpGraph t;
  t.op("Shape", {t.in("f32[N,3,?,4]")});
  EXPECT_EQ(t.infer(), "i64[4]");
  OpGraph s;
  s.op("Shape", {s.in("f32[N,3,5,4]")})->setAttr("start", ai(-3));
  s.node->setAttr("end", ai(100));  // clamped to the rank
  EXPECT_EQ(s.infer(), "i64[3]");
  OpGraph e;
  e.op("Shape", {e.in("f32[2,3]")})->setAttr("start", ai(5));
  EXPECT_EQ(e.infer(), "i64[0]");
  OpGraph u;
  u.op("Shape", {u.in("f32[*]")});
  EXPECT_EQ(u.infer(), "i64[?]");
  OpGraph z;
  z.op("Size", {z.in("f32[N,3]")});
  EXPECT_EQ(z.infer(), "i64[]");
}

TEST(OpsShapeInfer, ShapeOfStaticInputIsKnownWithoutData) {
  OpGraph t;
  t.op("Shape", {t.in("f32[2,3,5]")})->setAttr("start", ai(1));
  EXPECT_EQ(t.infer(), "i64[2]");
  ASSERT_NE(t.value(), nullptr);
  EXPECT_EQ(ints(*t.value()), (std::vector<int64_t>{3, 5}));
  OpGraph s;
  s.op("Size", {s.in("f32[2,3,5]")});
  ASSERT_EQ(s.run(), "");
  ASSERT_NE(s.value(), nullptr);
  EXPECT_EQ(ints(*s.value()), (std::vector<int64_t>{30}));
  OpGraph d;  // a symbolic dim: the shape is not a compile-time value
  d.op("Shape", {d.in("f32[N,3]")});
  ASSERT_EQ(d.run(), "");
  EXPECT_EQ(d.value(), nullptr);
}

std::string reshape(const std::string& in, std::vector<int64_t> shape, int64_t allowZero = 0) {
  OpGraph t;
  t.op("Reshape", {t.in(in), t.init(i64s(shape))});
  if (allowZero) t.node->setAttr("allowzero", ai(allowZero));
  return t.infer();
}

TEST(OpsShapeInfer, ReshapeZeroAndMinusOne) {
  EXPECT_EQ(reshape("f32[2,3,4]", {4, -1}), "f32[4,6]");
  EXPECT_EQ(reshape("f32[2,3,4]", {0, -1}), "f32[2,12]");
  EXPECT_EQ(reshape("f32[2,3,4]", {0, 0, 2, 2}), "f32[2,3,2,2]");
  EXPECT_EQ(reshape("f32[N,3,4]", {0, -1}), "f32[N,12]");
  EXPECT_EQ(reshape("f32[N,3,4]", {-1, 12}), "f32[N,12]");
  EXPECT_EQ(reshape("f32[N,3,4]", {-1, 6}), "f32[?,6]");
  EXPECT_EQ(reshape("f32[N,3,4]", {0, 2, -1}), "f32[N,2,6]");
  EXPECT_EQ(reshape("f32[N,M]", {0, 0, 1}), "f32[N,M,1]");
  EXPECT_EQ(reshape("f32[N,M]", {-1}), "f32[?]");
  EXPECT_EQ(reshape("f32[*]", {2, -1}), "f32[2,?]");
  EXPECT_EQ(reshape("f32[*]", {2, 3}), "f32[2,3]");
  EXPECT_TRUE(contains(reshape("f32[2,3]", {}),
                       "(Reshape): cannot reshape [2,3] (6 elements) to "
                       "[] (1 elements)"));
}

TEST(OpsShapeInfer, ReshapeAllowZero) {
  EXPECT_EQ(reshape("f32[0,3]", {0, 3}, 1), "f32[0,3]");
  EXPECT_EQ(reshape("f32[2,0]", {0, 4}, 1), "f32[0,4]");
  EXPECT_TRUE(contains(reshape("f32[0,3]", {0, -1}, 1), "both 0 and -1"));
  EXPECT_EQ(reshape("f32[2,3]", {0, 3}, 0), "f32[2,3]");  // 0 copies without allowzero
}

TEST(OpsShapeInfer, ReshapeErrors) {
  EXPECT_TRUE(contains(reshape("f32[2,3]", {4, -1}), "do not divide"));
  EXPECT_TRUE(contains(reshape("f32[2,3]", {-1, -1}), "more than one -1"));
  EXPECT_TRUE(contains(reshape("f32[2,3]", {-2, 3}), "must be >= -1"));
  EXPECT_TRUE(contains(reshape("f32[2,3]", {5}), "cannot reshape"));
  EXPECT_TRUE(contains(reshape("f32[2,3]", {0, 0, 0}), "input has rank 2"));
  EXPECT_TRUE(contains(reshape("f32[2,3]", {1LL << 40, 1LL << 40}), "overflows"));
  EXPECT_TRUE(contains(reshape("f32[0,3]", {0, -1}), "do not divide"));
  OpGraph t;
  t.op("Reshape", {t.in("f32[2,3]"), t.in("f32[2]")});
  EXPECT_TRUE(contains(t.infer(), "must be an integer tensor"));
}

TEST(OpsShapeInfer, ReshapeWithUnknownShapeValues) {
  OpGraph t;
  t.op("Reshape", {t.in("f32[2,3]"), t.in("i64[3]")});
  EXPECT_EQ(t.infer(), "f32[?,?,?]");
  OpGraph u;
  u.op("Reshape", {u.in("f32[2,3]"), u.in("i64[K]")});
  EXPECT_EQ(u.infer(), "f32[*]");
}

TEST(OpsShapeInfer, Flatten) {
  auto flatten = [](const std::string& in, int64_t axis) {
    OpGraph t;
    t.op("Flatten", {t.in(in)})->setAttr("axis", ai(axis));
    return t.infer();
  };
  EXPECT_EQ(flatten("f32[2,3,4,5]", 1), "f32[2,60]");
  EXPECT_EQ(flatten("f32[2,3,4,5]", 0), "f32[1,120]");
  EXPECT_EQ(flatten("f32[2,3,4,5]", 4), "f32[120,1]");
  EXPECT_EQ(flatten("f32[2,3,4,5]", -1), "f32[24,5]");
  EXPECT_EQ(flatten("f32[N,3,4]", 1), "f32[N,12]");
  EXPECT_EQ(flatten("f32[N,1,C]", 1), "f32[N,C]");
  EXPECT_EQ(flatten("f32[N,3,C]", 1), "f32[N,?]");
  EXPECT_TRUE(contains(flatten("f32[2,3]", 3), "out of range"));
  OpGraph d;
  d.op("Flatten", {d.in("f32[2,3,4]")});  // default axis 1
  EXPECT_EQ(d.infer(), "f32[2,12]");
}

TEST(OpsShapeInfer, Squeeze) {
  auto squeeze = [](const std::string& in, std::optional<std::vector<int64_t>> axes) {
    OpGraph t;
    std::vector<Value*> ins{t.in(in)};
    if (axes) ins.push_back(t.init(i64s(*axes)));
    t.op("Squeeze", ins);
    return t.infer();
  };
  EXPECT_EQ(squeeze("f32[1,3,1,4]", std::nullopt), "f32[3,4]");
  EXPECT_EQ(squeeze("f32[1,3,1,4]", std::vector<int64_t>{0}), "f32[3,1,4]");
  EXPECT_EQ(squeeze("f32[1,3,1,4]", std::vector<int64_t>{-2, 0}), "f32[3,4]");
  EXPECT_EQ(squeeze("f32[N,1]", std::vector<int64_t>{1}), "f32[N]");
  EXPECT_EQ(squeeze("f32[N,1]", std::vector<int64_t>{0}), "f32[1]");  // N must be 1
  EXPECT_EQ(squeeze("f32[N,1]", std::nullopt), "f32[*]");             // N might be 1
  EXPECT_TRUE(contains(squeeze("f32[2,3]", std::vector<int64_t>{0}), "of size 2"));
  EXPECT_TRUE(contains(squeeze("f32[1,3]", std::vector<int64_t>{2}), "out of range"));
  EXPECT_TRUE(contains(squeeze("f32[1,1]", std::vector<int64_t>{0, -2}), "repeated"));
  OpGraph u;
  u.op("Squeeze", {u.in("f32[1,3,1]"), u.in("i64[2]")});
  EXPECT_EQ(u.infer(), "f32[?]");
}

TEST(OpsShapeInfer, Unsqueeze) {
  auto unsqueeze = [](const std::string& in, std::vector<int64_t> axes) {
    OpGraph t;
    t.op("Unsqueeze", {t.in(in), t.init(i64s(axes))});
    return t.infer();
  };
  EXPECT_EQ(unsqueeze("f32[3,4]", {0}), "f32[1,3,4]");
  EXPECT_EQ(unsqueeze("f32[3,4]", {-1}), "f32[3,4,1]");
  EXPECT_EQ(unsqueeze("f32[3,4]", {0, 3}), "f32[1,3,4,1]");
  EXPECT_EQ(unsqueeze("f32[N,C]", {2, 0}), "f32[1,N,1,C]");
  EXPECT_EQ(unsqueeze("f32[]", {0}), "f32[1]");
  EXPECT_TRUE(contains(unsqueeze("f32[3]", {2}), "out of range"));
  EXPECT_TRUE(contains(unsqueeze("f32[3]", {0, -3}), "repeated"));
  OpGraph u;
  u.op("Unsqueeze", {u.in("f32[3]"), u.in("i64[2]")});
  EXPECT_EQ(u.infer(), "f32[?,?,?]");
}

TEST(OpsShapeInfer, Transpose) {
  OpGraph d;
  d.op("Transpose", {d.in("f32[N,3,4]")});
  EXPECT_EQ(d.infer(), "f32[4,3,N]");
  OpGraph p;
  p.op("Transpose", {p.in("f32[N,3,H,W]")})->setAttr("perm", ais({0, 2, 3, 1}));
  EXPECT_EQ(p.infer(), "f32[N,H,W,3]");
  OpGraph bad;
  bad.op("Transpose", {bad.in("f32[2,3]")})->setAttr("perm", ais({0, 0}));
  EXPECT_TRUE(contains(bad.infer(), "permutation"));
  OpGraph len;
  len.op("Transpose", {len.in("f32[2,3]")})->setAttr("perm", ais({0, 1, 2}));
  EXPECT_TRUE(contains(len.infer(), "rank 2"));
}

TEST(OpsShapeInfer, Expand) {
  auto expand = [](const std::string& in, std::vector<int64_t> shape) {
    OpGraph t;
    t.op("Expand", {t.in(in), t.init(i64s(shape))});
    return t.infer();
  };
  EXPECT_EQ(expand("f32[3,1]", {2, 1, 6}), "f32[2,3,6]");
  EXPECT_EQ(expand("f32[3,1]", {1}), "f32[3,1]");  // shape smaller than the input
  EXPECT_EQ(expand("f32[N,1]", {1, 4}), "f32[N,4]");
  EXPECT_TRUE(contains(expand("f32[3]", {4}), "cannot broadcast"));
  EXPECT_TRUE(contains(expand("f32[3]", {-1}), "negative"));
  OpGraph u;
  u.op("Expand", {u.in("f32[3,1]"), u.in("i64[3]")});
  EXPECT_EQ(u.infer(), "f32[?,3,?]");
}

// The pattern exporters emit for x.view(x.size(0), -1): with static input dims it must
// fold to a static Reshape through compile-time evaluation.
TEST(OpsShapeInfer, ShapeGatherConcatReshapeResolvesStatically) {
  OpGraph t;
  Value* x = t.in("f32[2,3,4]");
  Node* shape = t.op("Shape", {x});
  Node* gather = t.op("Gather", {shape->output(0), t.init(i64(0))});
  gather->setAttr("axis", ai(0));
  Node* unsq = t.op("Unsqueeze", {gather->output(0), t.init(i64s({0}))});
  Node* concat = t.op("Concat", {unsq->output(0), t.init(i64s({-1}))});
  concat->setAttr("axis", ai(0));
  t.op("Reshape", {x, concat->output(0)});
  EXPECT_EQ(t.infer(), "f32[2,12]");
  EXPECT_EQ(toString(gather->output(0)->type()), "i64[]");
  EXPECT_EQ(toString(concat->output(0)->type()), "i64[2]");
  ASSERT_NE(t.known.count(concat->output(0)), 0u);
  EXPECT_EQ(ints(t.known[concat->output(0)]), (std::vector<int64_t>{2, -1}));
}

TEST(OpsShapeInfer, ChainThroughCastAndSliceAndRange) {
  OpGraph t;
  Value* x = t.in("f32[5,7]");
  Node* shape = t.op("Shape", {x});
  Node* last = t.op("Slice", {shape->output(0), t.init(i64s({-1})), t.init(i64s({100}))});
  Node* cast = t.op("Cast", {last->output(0)});
  cast->setAttr("to", astr("i32"));
  Node* sq = t.op("Squeeze", {cast->output(0)});
  Node* range = t.op("Range", {t.init(Tensor::scalar<int32_t>(DType::I32, 0)), sq->output(0),
                               t.init(Tensor::scalar<int32_t>(DType::I32, 2))});
  EXPECT_EQ(t.infer(), "i32[4]");
  ASSERT_NE(t.value(), nullptr);
  EXPECT_EQ(ints(*t.value()), (std::vector<int64_t>{0, 2, 4, 6}));
  (void)range;
}

}  // namespace
}  // namespace kiln
