// Reference detection kernels (kernels/ref/misc.h): RoiAlign and NonMaxSuppression against
// onnx 1.12 node-test data and hand-checked edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "../../kernels/ref/misc.h"
#include "kernels_data_test_util.h"

namespace {

using namespace kernels_test;

// ============================== misc.h: RoiAlign, NonMaxSuppression ===================

struct RoiAlignNodeCase {
  const char* name;
  int64_t out_h, out_w, sampling_ratio;
  float spatial_scale;
  int half_pixel;
  Dims x_dims;
  std::vector<float> x, rois;
  Dims batch;
  std::vector<float> expected;
};

/// The 1x1x10x10 input shared by the ONNX RoiAlign node tests below.
const std::vector<float> kRoiAlignX10x10 = {0.27639999985694885f, 0.7149999737739563f,  0.19580000638961792f,  0.3416000008583069f,
    0.46380001306533813f, 0.02590000070631504f, 0.2962999939918518f,   0.6517999768257141f,
    0.48559999465942383f, 0.7250000238418579f,  0.963699996471405f,    0.08950000256299973f,
    0.29190000891685486f, 0.6753000020980835f,  0.023399999365210533f, 0.6132000088691711f,
    0.8084999918937683f,  0.5324000120162964f,  0.8992000222206116f,   0.44670000672340393f,
    0.3264999985694885f,  0.8478999733924866f,  0.9697999954223633f,   0.24709999561309814f,
    0.9336000084877014f,  0.18780000507831573f, 0.4765999913215637f,   0.4307999908924103f,
    0.3400000035762787f,  0.21619999408721924f, 0.020600000396370888f, 0.1720000058412552f,
    0.21549999713897705f, 0.43939998745918274f, 0.06530000269412994f,  0.34060001373291016f,
    0.7724000215530396f,  0.3921000063419342f,  0.2540999948978424f,   0.5799000263214111f,
    0.40619999170303345f, 0.21940000355243683f, 0.447299987077713f,    0.46869999170303345f,
    0.7109000086784363f,  0.932699978351593f,   0.9815000295639038f,   0.6320000290870667f,
    0.1728000044822693f,  0.6118999719619751f,  0.30970001220703125f,  0.1282999962568283f,
    0.4984000027179718f,  0.5067999958992004f,  0.4278999865055084f,   0.01730000041425228f,
    0.43880000710487366f, 0.0430000014603138f,  0.46709999442100525f,  0.711899995803833f,
    0.10109999775886536f, 0.8476999998092651f,  0.4726000130176544f,   0.1776999980211258f,
    0.9922999739646912f,  0.4041999876499176f,  0.18690000474452972f,  0.7795000076293945f,
    0.9945999979972839f,  0.9689000248908997f,  0.13660000264644623f,  0.3671000003814697f,
    0.7010999917984009f,  0.6233999729156494f,  0.9866999983787537f,   0.5584999918937683f,
    0.6984999775886536f,  0.5608999729156494f,  0.8787999749183655f,   0.9927999973297119f,
    0.5697000026702881f,  0.8511000275611877f,  0.6711000204086304f,   0.9405999779701233f,
    0.8751000165939331f,  0.7495999932289124f,  0.16500000655651093f,  0.10490000247955322f,
    0.1559000015258789f,  0.2513999938964844f,  0.701200008392334f,    0.40560001134872437f,
    0.7878999710083008f,  0.34610000252723694f, 0.04149999842047691f,  0.29980000853538513f,
    0.5094000101089478f,  0.3727000057697296f,  0.5482000112533569f,   0.050200000405311584f};

const RoiAlignNodeCase kRoiAlignNodeCases[] = {
    {"test_roialign_aligned_false",
     5,
     5,
     2,
     1.0f,
     0,
     {1, 1, 10, 10},
     kRoiAlignX10x10,
     {0.0f, 0.0f, 9.0f, 9.0f, 0.0f, 5.0f, 4.0f, 9.0f, 5.0f, 5.0f, 9.0f, 9.0f},
     {0, 0, 0},
     {0.46639999747276306f, 0.4465999901294708f,  0.34049999713897705f, 0.5687999725341797f,
      0.6068000197410583f,  0.37139999866485596f, 0.4296000003814697f,  0.38350000977516174f,
      0.5562000274658203f,  0.35100001096725464f, 0.2768000066280365f,  0.48829999566078186f,
      0.5221999883651733f,  0.5527999997138977f,  0.4171000123023987f,  0.47130000591278076f,
      0.4844000041484833f,  0.6904000043869019f,  0.492000013589859f,   0.8773999810218811f,
      0.6238999962806702f,  0.7124999761581421f,  0.6288999915122986f,  0.33550000190734863f,
      0.34950000047683716f, 0.30219998955726624f, 0.43050000071525574f, 0.46959999203681946f,
      0.3977999985218048f,  0.5422999858856201f,  0.36559998989105225f, 0.7049999833106995f,
      0.5164999961853027f,  0.3172000050544739f,  0.7014999985694885f,  0.29120001196861267f,
      0.5059000253677368f,  0.647599995136261f,   0.6234999895095825f,  0.8299000263214111f,
      0.5916000008583069f,  0.7389000058174133f,  0.704800009727478f,   0.8371999859809875f,
      0.8892999887466431f,  0.6226999759674072f,  0.6152999997138977f,  0.7096999883651733f,
      0.6154000163078308f,  0.4584999978542328f,  0.23839999735355377f, 0.3379000127315521f,
      0.3716999888420105f,  0.6100000143051147f,  0.7601000070571899f,  0.3767000138759613f,
      0.3785000145435333f,  0.7146999835968018f,  0.9243000149726868f,  0.9726999998092651f,
      0.5748999714851379f,  0.5825999975204468f,  0.570900022983551f,   0.761900007724762f,
      0.8769999742507935f,  0.5354999899864197f,  0.2565999925136566f,  0.21410000324249268f,
      0.27959999442100525f, 0.36000001430511475f, 0.43650001287460327f, 0.35040000081062317f,
      0.28870001435279846f, 0.366100013256073f,   0.23489999771118164f}},
    {"test_roialign_aligned_true",
     5,
     5,
     2,
     1.0f,
     1,
     {1, 1, 10, 10},
     kRoiAlignX10x10,
     {0.0f, 0.0f, 9.0f, 9.0f, 0.0f, 5.0f, 4.0f, 9.0f, 5.0f, 5.0f, 9.0f, 9.0f},
     {0, 0, 0},
     {0.517799973487854f,   0.3434000015258789f,  0.3228999972343445f,  0.4474000036716461f,
      0.6344000101089478f,  0.40310001373291016f, 0.5365999937057495f,  0.44279998540878296f,
      0.4860999882221222f,  0.40230000019073486f, 0.25119999051094055f, 0.4002000093460083f,
      0.515500009059906f,   0.6953999996185303f,  0.3465000092983246f,  0.33500000834465027f,
      0.460099995136261f,   0.588100016117096f,   0.34389999508857727f, 0.6848999857902527f,
      0.49320000410079956f, 0.7141000032424927f,  0.8216999769210815f,  0.47189998626708984f,
      0.40389999747276306f, 0.3070000112056732f,  0.21870000660419464f, 0.3337000012397766f,
      0.4880000054836273f,  0.4869999885559082f,  0.18709999322891235f, 0.49140000343322754f,
      0.5561000108718872f,  0.41920000314712524f, 0.3686000108718872f,  0.14329999685287476f,
      0.4607999920845032f,  0.597100019454956f,   0.531000018119812f,   0.498199999332428f,
      0.27880001068115234f, 0.43860000371932983f, 0.6021999716758728f,  0.699999988079071f,
      0.7523999810218811f,  0.5774000287055969f,  0.7024000287055969f,  0.7250999808311462f,
      0.7337999939918518f,  0.8162999749183655f,  0.23929999768733978f, 0.4074999988079071f,
      0.3379000127315521f,  0.2524999976158142f,  0.47429999709129333f, 0.3671000003814697f,
      0.2702000141143799f,  0.4104999899864197f,  0.6419000029563904f,  0.8307999968528748f,
      0.5555999875068665f,  0.4542999863624573f,  0.5564000010490417f,  0.7501999735832214f,
      0.9300000071525574f,  0.6625999808311462f,  0.5616999864578247f,  0.4812999963760376f,
      0.49540001153945923f, 0.6662999987602234f,  0.6636000275611877f,  0.37209999561309814f,
      0.20559999346733093f, 0.19280000030994415f, 0.24779999256134033f}},
};

TEST(KernelsDataMisc, RoiAlignOnnxNodeTests) {
  for (const auto& c : kRoiAlignNodeCases) {
    std::vector<float> out(c.expected.size());
    ASSERT_EQ(kiln_ref::roi_align<float>(c.x_dims[0], c.x_dims[1], c.x_dims[2], c.x_dims[3],
                                         int64_t(c.batch.size()), c.rois.data(), c.batch.data(),
                                         c.out_h, c.out_w, c.sampling_ratio, c.spatial_scale, 0,
                                         c.half_pixel, c.x.data(), out.data()),
              0);
    expect_close(out, c.expected, 1e-3, 1e-4, c.name);
  }
}

TEST(KernelsDataMisc, RoiAlignMaxModeAndBadBatch) {
  // 2x2 input, one bin over the whole map with one sample at its centre (1, 1) -> clamped to the
  // last pixel: all weight on x[1][1]. Max of weighted corner terms (ORT semantics).
  const float x[4] = {1, 2, 3, 4}, roi[4] = {0, 0, 2, 2};
  const int64_t b[1] = {0}, bad[1] = {1};
  float y = 0;
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, roi, b, 1, 1, 1, 1.f, 1, 0, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 4.f);
  // Sample at (0.5, 0.5) (roi 0..1 with output_half_pixel): avg = 2.5, max term = 0.25 * 4.
  const float r2[4] = {0, 0, 1, 1};
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, r2, b, 1, 1, 1, 1.f, 0, 0, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 2.5f);
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, r2, b, 1, 1, 1, 1.f, 1, 0, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 1.f);
  // output_half_pixel forces a degenerate roi to 1x1 (sample at 0.5, 0.5); half_pixel does not
  // (the empty roi samples at -0.5, clamped to pixel 0).
  const float dot[4] = {0, 0, 0, 0};
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, dot, b, 1, 1, 1, 1.f, 0, 0, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 2.5f);
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, dot, b, 1, 1, 1, 1.f, 0, 1, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 1.f);
  y = -1;
  EXPECT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, r2, bad, 1, 1, 1, 1.f, 0, 0, x, &y), 1);
  EXPECT_EQ(y, -1.f);
}

struct NmsNodeCase {
  const char* name;
  int center_point_box;
  Dims box_dims, score_dims;
  int64_t max_out;
  float iou, score_threshold;
  int has_score_threshold;
  std::vector<float> boxes, scores;
  std::vector<int64_t> expected;
};

/// The six boxes ([y1, x1, y2, x2]) and their scores most ONNX NonMaxSuppression node tests use.
const std::vector<float> kNmsBoxes6 = {0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.10000000149011612f,
                                       1.0f, 1.100000023841858f, 0.0f, -0.10000000149011612f,
                                       1.0f, 0.8999999761581421f, 0.0f, 10.0f, 1.0f, 11.0f,
                                       0.0f, 10.100000381469727f, 1.0f, 11.100000381469727f,
                                       0.0f, 100.0f, 1.0f, 101.0f};
const std::vector<float> kNmsScores6 = {0.8999999761581421f, 0.75f, 0.6000000238418579f,
                                        0.949999988079071f, 0.5f, 0.30000001192092896f};

const NmsNodeCase kNmsNodeCases[] = {
    {"test_nonmaxsuppression_center_point_box_format",
     1,
     {1, 6, 4},
     {1, 1, 6},
     3,
     0.5f,
     0.0f,
     1,
     {0.5f, 0.5f,
      1.0f, 1.0f,
      0.5f, 0.6000000238418579f,
      1.0f, 1.0f,
      0.5f, 0.4000000059604645f,
      1.0f, 1.0f,
      0.5f, 10.5f,
      1.0f, 1.0f,
      0.5f, 10.600000381469727f,
      1.0f, 1.0f,
      0.5f, 100.5f,
      1.0f, 1.0f},
     kNmsScores6,
     {0, 0, 3, 0, 0, 0, 0, 0, 5}},
    {"test_nonmaxsuppression_flipped_coordinates",
     0,
     {1, 6, 4},
     {1, 1, 6},
     3,
     0.5f,
     0.0f,
     1,
     {1.0f, 1.0f,
      0.0f, 0.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, 0.8999999761581421f,
      1.0f, -0.10000000149011612f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      1.0f, 10.100000381469727f,
      0.0f, 11.100000381469727f,
      1.0f, 101.0f,
      0.0f, 100.0f},
     kNmsScores6,
     {0, 0, 3, 0, 0, 0, 0, 0, 5}},
    {"test_nonmaxsuppression_identical_boxes",
     0,
     {1, 10, 4},
     {1, 1, 10},
     3,
     0.5f,
     0.0f,
     1,
     {0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f,
      1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f,
      0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f},
     {0.8999999761581421f, 0.8999999761581421f, 0.8999999761581421f, 0.8999999761581421f,
      0.8999999761581421f, 0.8999999761581421f, 0.8999999761581421f, 0.8999999761581421f,
      0.8999999761581421f, 0.8999999761581421f},
     {0, 0, 0}},
    {"test_nonmaxsuppression_limit_output_size",
     0,
     {1, 6, 4},
     {1, 1, 6},
     2,
     0.5f,
     0.0f,
     1,
     kNmsBoxes6,
     kNmsScores6,
     {0, 0, 3, 0, 0, 0}},
    {"test_nonmaxsuppression_single_box",
     0,
     {1, 1, 4},
     {1, 1, 1},
     3,
     0.5f,
     0.0f,
     1,
     {0.0f, 0.0f, 1.0f, 1.0f},
     {0.8999999761581421f},
     {0, 0, 0}},
    {"test_nonmaxsuppression_suppress_by_IOU",
     0,
     {1, 6, 4},
     {1, 1, 6},
     3,
     0.5f,
     0.0f,
     1,
     kNmsBoxes6,
     kNmsScores6,
     {0, 0, 3, 0, 0, 0, 0, 0, 5}},
    {"test_nonmaxsuppression_suppress_by_IOU_and_scores",
     0,
     {1, 6, 4},
     {1, 1, 6},
     3,
     0.5f,
     0.4000000059604645f,
     1,
     kNmsBoxes6,
     kNmsScores6,
     {0, 0, 3, 0, 0, 0}},
    {"test_nonmaxsuppression_two_batches",
     0,
     {2, 6, 4},
     {2, 1, 6},
     2,
     0.5f,
     0.0f,
     1,
     {0.0f, 0.0f,
      1.0f, 1.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, -0.10000000149011612f,
      1.0f, 0.8999999761581421f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      0.0f, 10.100000381469727f,
      1.0f, 11.100000381469727f,
      0.0f, 100.0f,
      1.0f, 101.0f,
      0.0f, 0.0f,
      1.0f, 1.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, -0.10000000149011612f,
      1.0f, 0.8999999761581421f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      0.0f, 10.100000381469727f,
      1.0f, 11.100000381469727f,
      0.0f, 100.0f,
      1.0f, 101.0f},
     {0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f, 0.5f,
      0.30000001192092896f, 0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f,
      0.5f, 0.30000001192092896f},
     {0, 0, 3, 0, 0, 0, 1, 0, 3, 1, 0, 0}},
    {"test_nonmaxsuppression_two_classes",
     0,
     {1, 6, 4},
     {1, 2, 6},
     2,
     0.5f,
     0.0f,
     1,
     kNmsBoxes6,
     {0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f, 0.5f,
      0.30000001192092896f, 0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f,
      0.5f, 0.30000001192092896f},
     {0, 0, 3, 0, 0, 0, 0, 1, 3, 0, 1, 0}},
};

TEST(KernelsDataMisc, NonMaxSuppressionOnnxNodeTests) {
  for (const auto& c : kNmsNodeCases) {
    const int64_t B = c.box_dims[0], n = c.box_dims[1], C = c.score_dims[1];
    const int64_t cap = B * C * std::min(c.max_out, n);
    std::vector<int64_t> sel(static_cast<size_t>(cap * 3 + 3)),
        scratch(static_cast<size_t>(kiln_ref::nms_scratch_bytes(n) / 8));
    const int64_t count = kiln_ref::non_max_suppression(
        B, n, C, c.boxes.data(), c.scores.data(), c.max_out, c.iou, c.score_threshold,
        c.has_score_threshold, c.center_point_box, sel.data(), cap, scratch.data());
    ASSERT_GE(count, 0) << c.name;
    sel.resize(static_cast<size_t>(count * 3));
    EXPECT_EQ(sel, c.expected) << c.name;
  }
  // IoU exactly at the threshold does not suppress (strictly greater); flipped corners and
  // center-point boxes describe the same rectangles.
  const float two_boxes[8] = {0, 0, 2, 1, 1, 1, 0, 0},
              centers[8] = {0.5f, 1, 1, 2, 0.5f, 0.5f, 1, 1};
  const float two_scores[2] = {0.9f, 0.8f};
  int64_t picked[6], scr[4];
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, two_boxes, two_scores, 5, 0.5f, 0, 0, 0, picked,
                                          2, scr),
            2);
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, two_boxes, two_scores, 5, 0.49f, 0, 0, 0, picked,
                                          2, scr),
            1);
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, centers, two_scores, 5, 0.49f, 0, 0, 1, picked,
                                          2, scr),
            1);
  // Score threshold is strict; NaN scores never qualify.
  const float nan_scores[2] = {std::nanf(""), 0.5f};
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, two_boxes, nan_scores, 5, 0.99f, 0.5f, 1, 0,
                                          picked, 2, scr),
            0);
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, two_boxes, nan_scores, 5, 0.99f, 0, 0, 0, picked,
                                          2, scr),
            1);
  EXPECT_EQ(picked[2], 1);
  // Capacity too small -> -1; max_output 0 -> nothing.
  const auto& c = kNmsNodeCases[0];
  std::vector<int64_t> sel(3), scratch(64);
  EXPECT_EQ(
      kiln_ref::non_max_suppression(1, c.box_dims[1], 1, c.boxes.data(), c.scores.data(), 3, 0.5f,
                                    0, 0, c.center_point_box, sel.data(), 0, scratch.data()),
      -1);
  EXPECT_EQ(
      kiln_ref::non_max_suppression(1, c.box_dims[1], 1, c.boxes.data(), c.scores.data(), 0, 0.5f,
                                    0, 0, c.center_point_box, sel.data(), 0, scratch.data()),
      0);
}

}  // namespace
