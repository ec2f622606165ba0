// .npy reading and writing, checked against bytes that numpy 1.24 itself wrote.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/support/npy.h"

namespace kiln {
namespace {

using namespace std::string_view_literals;

// Captured from numpy 1.24.2 (np.save / numpy.lib.format.write_array), never regenerated at
// test time. kNumpyXX is np.arange(6) - 2 (np.arange(6) for unsigned, np.arange(6) % 2 == 1
// for bool) cast to that dtype and reshaped to (2, 3).
constexpr std::string_view kNumpyF2 =
    "\223NUMPY\001\000v\000{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\000\300\000\274\000\000"
    "\000<\000@\000B"sv;
constexpr std::string_view kNumpyF4 =
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\000\000\000\300\000\000"
    "\200\277\000\000\000\000\000\000\200\077\000\000\000@\000\000@@"sv;
constexpr std::string_view kNumpyF8 =
    "\223NUMPY\001\000v\000{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\000\000\000\000\000\000"
    "\000\300\000\000\000\000\000\000\360\277\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\360\077\000\000\000\000\000\000\000@\000\000\000\000\000\000\010@"sv;
constexpr std::string_view kNumpyI1 =
    "\223NUMPY\001\000v\000{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\376\377\000\001\002\003"sv;
constexpr std::string_view kNumpyI2 =
    "\223NUMPY\001\000v\000{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\376\377\377\377\000\000"
    "\001\000\002\000\003\000"sv;
constexpr std::string_view kNumpyI4 =
    "\223NUMPY\001\000v\000{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\376\377\377\377\377\377"
    "\377\377\000\000\000\000\001\000\000\000\002\000\000\000\003\000\000\000"sv;
constexpr std::string_view kNumpyI8 =
    "\223NUMPY\001\000v\000{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\376\377\377\377\377\377"
    "\377\377\377\377\377\377\377\377\377\377\000\000\000\000\000\000\000\000\001\000\000"
    "\000\000\000\000\000\002\000\000\000\000\000\000\000\003\000\000\000\000\000\000\000"sv;
constexpr std::string_view kNumpyU1 =
    "\223NUMPY\001\000v\000{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\000\001\002\003\004\005"sv;
constexpr std::string_view kNumpyU2 =
    "\223NUMPY\001\000v\000{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\000\000\001\000\002\000"
    "\003\000\004\000\005\000"sv;
constexpr std::string_view kNumpyU4 =
    "\223NUMPY\001\000v\000{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\000\000\000\000\001\000"
    "\000\000\002\000\000\000\003\000\000\000\004\000\000\000\005\000\000\000"sv;
constexpr std::string_view kNumpyU8 =
    "\223NUMPY\001\000v\000{'descr': '<u8', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\000\000\000\000\000\000"
    "\000\000\001\000\000\000\000\000\000\000\002\000\000\000\000\000\000\000\003\000\000"
    "\000\000\000\000\000\004\000\000\000\000\000\000\000\005\000\000\000\000\000\000\000"sv;
constexpr std::string_view kNumpyB1 =
    "\223NUMPY\001\000v\000{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }   "
    "                                                       \012\000\001\000\001\000\001"sv;
constexpr std::string_view kI8Scalar =
    "\223NUMPY\001\000v\000{'descr': '<i8', 'fortran_order': False, 'shape': (), }       "
    "                                                       \012\007\000\000\000\000\000"
    "\000\000"sv;
constexpr std::string_view kU1Empty0x3 =
    "\223NUMPY\001\000v\000{'descr': '|u1', 'fortran_order': False, 'shape': (0, 3), }   "
    "                                                       \012"sv;
constexpr std::string_view kF2V2 =
    "\223NUMPY\002\000t\000\000\000{'descr': '<f2', 'fortran_order': False, 'shape': (3,)"
    ", }                                                          \012\000\000\000<\000@"sv;
constexpr std::string_view kF8V3 =
    "\223NUMPY\003\000t\000\000\000{'descr': '<f8', 'fortran_order': False, 'shape': (3,)"
    ", }                                                          \012\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\360\077\000\000\000\000\000\000\000@"sv;
constexpr std::string_view kBigEndianI4 =
    "\223NUMPY\001\000v\000{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }     "
    "                                                       \012\000\000\000\000\000\000"
    "\000\001\000\000\000\002"sv;
constexpr std::string_view kFortranI2 =
    "\223NUMPY\001\000v\000{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }    "
    "                                                       \012\000\000\003\000\001\000"
    "\004\000\002\000\005\000"sv;
constexpr std::string_view kObject =
    "\223NUMPY\001\000v\000{'descr': '|O', 'fortran_order': False, 'shape': (2,), }      "
    "                                                       \012\200\003cnumpy.core.multi"
    "array\012_reconstruct\012q\000cnumpy\012ndarray\012q\001K\000\205q\002C\001bq\003"
    "\207q\004Rq\005(K\001K\002\205q\006cnumpy\012dtype\012q\007X\002\000\000\000O8q\010"
    "\211\210\207q\011Rq\012(K\003X\001\000\000\000|q\013NNNJ\377\377\377\377J\377\377"
    "\377\377K\077tq\014b\211]q\015(K\001X\001\000\000\000aq\016etq\017b."sv;
constexpr std::string_view kStructured =
    "\223NUMPY\001\000v\000{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,"
    "), }                                                   \012\000\000\000\000\000\000"
    "\000\000"sv;
constexpr std::string_view kLongShape =
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape': (3, 100), } "
    "                                                       \012\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000"sv;

template <typename T>
std::string bytesOf(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(s.data(), values.data(), s.size());
  return s;
}

struct NumpyCase {
  std::string_view file;
  std::string_view descr;
  std::string data;  // the expected elements, little-endian (as on every host kiln targets)
};

std::vector<NumpyCase> numpyCases() {
  return {
      {kNumpyF2, "<f2", bytesOf<uint16_t>({0xc000, 0xbc00, 0, 0x3c00, 0x4000, 0x4200})},
      {kNumpyF4, "<f4", bytesOf<float>({-2, -1, 0, 1, 2, 3})},
      {kNumpyF8, "<f8", bytesOf<double>({-2, -1, 0, 1, 2, 3})},
      {kNumpyI1, "|i1", bytesOf<int8_t>({-2, -1, 0, 1, 2, 3})},
      {kNumpyI2, "<i2", bytesOf<int16_t>({-2, -1, 0, 1, 2, 3})},
      {kNumpyI4, "<i4", bytesOf<int32_t>({-2, -1, 0, 1, 2, 3})},
      {kNumpyI8, "<i8", bytesOf<int64_t>({-2, -1, 0, 1, 2, 3})},
      {kNumpyU1, "|u1", bytesOf<uint8_t>({0, 1, 2, 3, 4, 5})},
      {kNumpyU2, "<u2", bytesOf<uint16_t>({0, 1, 2, 3, 4, 5})},
      {kNumpyU4, "<u4", bytesOf<uint32_t>({0, 1, 2, 3, 4, 5})},
      {kNumpyU8, "<u8", bytesOf<uint64_t>({0, 1, 2, 3, 4, 5})},
      {kNumpyB1, "|b1", bytesOf<uint8_t>({0, 1, 0, 1, 0, 1})},
  };
}

TEST(Npy, ReadsEveryDtypeNumpyWrites) {
  for (const NumpyCase& c : numpyCases()) {
    SCOPED_TRACE(std::string(c.descr));
    auto a = parseNpy(c.file);
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_EQ(a->descr, c.descr);
    EXPECT_FALSE(a->fortranOrder);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(a->data, c.data);
  }
}

TEST(Npy, WritesTheSameBytesAsNumpy) {
  for (const NumpyCase& c : numpyCases()) {
    SCOPED_TRACE(std::string(c.descr));
    EXPECT_EQ(encodeNpy(c.descr, {2, 3}, c.data.data(), c.data.size()), c.file);
  }
  int64_t seven = 7;
  EXPECT_EQ(encodeNpy("<i8", {}, &seven, sizeof seven), kI8Scalar);
  EXPECT_EQ(encodeNpy("|u1", {0, 3}, nullptr, 0), kU1Empty0x3);
  std::vector<float> zeros(300, 0.0f);
  EXPECT_EQ(encodeNpy("<f4", {3, 100}, zeros.data(), zeros.size() * 4), kLongShape);
}

TEST(Npy, DataStartsAligned) {
  for (size_t rank = 0; rank < 40; ++rank) {
    std::vector<int64_t> shape(rank, 1);
    if (rank > 0) shape[0] = int64_t(rank) * 123457;  // vary the header length
    // encodeNpy trusts its caller about the data size; with no data it returns the header.
    std::string file = encodeNpy("<f4", shape, nullptr, 0);
    size_t headerEnd = file.size();
    EXPECT_EQ(headerEnd % 64, 0u) << "rank " << rank;
    EXPECT_EQ(file[headerEnd - 1], '\n');
  }
}

TEST(Npy, ReadsScalarsEmptyArraysAndNewerVersions) {
  auto scalar = parseNpy(kI8Scalar);
  ASSERT_TRUE(scalar.ok()) << scalar.message();
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->data, bytesOf<int64_t>({7}));

  auto empty = parseNpy(kU1Empty0x3);
  ASSERT_TRUE(empty.ok()) << empty.message();
  EXPECT_EQ(empty->shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(empty->data.empty());

  auto v2 = parseNpy(kF2V2);
  ASSERT_TRUE(v2.ok()) << v2.message();
  EXPECT_EQ(v2->descr, "<f2");
  EXPECT_EQ(v2->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(v2->data, bytesOf<uint16_t>({0, 0x3c00, 0x4000}));

  auto v3 = parseNpy(kF8V3);
  ASSERT_TRUE(v3.ok()) << v3.message();
  EXPECT_EQ(v3->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(v3->data, bytesOf<double>({0, 1, 2}));

  auto big = parseNpy(kLongShape);
  ASSERT_TRUE(big.ok()) << big.message();
  EXPECT_EQ(big->shape, (std::vector<int64_t>{3, 100}));
}

TEST(Npy, RoundTripsEveryDtypeThroughAFile) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("kiln_npy_test_" + std::to_string(::getpid()) + ".npy"))
                         .string();
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {5}, {2, 3}, {2, 0, 4}, {1, 2, 3, 4}};
  for (std::string_view descr :
       {"<f2", "<f4", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"}) {
    int64_t item = *npyItemSize(descr);
    for (const auto& shape : shapes) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::string data(size_t(n * item), '\0');
      for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 37 + 11);
      if (descr == "|b1")
        for (char& c : data) c = char(c & 1);
      SCOPED_TRACE(std::string(descr) + " rank " + std::to_string(shape.size()));
      ASSERT_TRUE(writeNpyFile(path, descr, shape, data.data(), data.size()).ok());
      auto back = readNpyFile(path);
      ASSERT_TRUE(back.ok()) << back.message();
      EXPECT_EQ(back->descr, descr);
      EXPECT_EQ(back->shape, shape);
      EXPECT_EQ(back->data, data);
      ASSERT_TRUE(writeNpyFile(path, *back).ok());
      auto again = readNpyFile(path);
      ASSERT_TRUE(again.ok()) << again.message();
      EXPECT_EQ(again->data, data);
    }
  }
  std::filesystem::remove(path);
}

TEST(Npy, RefusesUnsupportedArraysClearly) {
  auto big = parseNpy(kBigEndianI4);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.message().find("big-endian"), std::string::npos) << big.message();
  auto fortran = parseNpy(kFortranI2);
  ASSERT_FALSE(fortran.ok());
  EXPECT_NE(fortran.message().find("Fortran"), std::string::npos) << fortran.message();
  auto object = parseNpy(kObject);
  ASSERT_FALSE(object.ok());
  EXPECT_NE(object.message().find("pickled"), std::string::npos) << object.message();
  auto structured = parseNpy(kStructured);
  ASSERT_FALSE(structured.ok());
  EXPECT_NE(structured.message().find("structured"), std::string::npos) << structured.message();
  EXPECT_FALSE(npyItemSize("<c8").ok());
  EXPECT_FALSE(npyItemSize("<U5").ok());
  EXPECT_FALSE(npyItemSize("|f4").ok());
  EXPECT_FALSE(npyItemSize("").ok());
  EXPECT_TRUE(npyItemSize(">u1").ok());  // byte order does not matter for one byte
}

TEST(Npy, MissingFileNamesThePath) {
  auto a = readNpyFile("/nonexistent/kiln/x.npy");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("/nonexistent/kiln/x.npy"), std::string::npos);
}

TEST(Npy, WriterChecksItsArguments) {
  float f[2] = {1, 2};
  EXPECT_FALSE(writeNpyFile("/tmp/unused.npy", "<f4", {3}, f, sizeof f).ok());  // size mismatch
  EXPECT_FALSE(writeNpyFile("/tmp/unused.npy", ">f4", {2}, f, sizeof f).ok());
  EXPECT_FALSE(writeNpyFile("/tmp/unused.npy", "<f4", {-2}, f, sizeof f).ok());
  EXPECT_FALSE(writeNpyFile("/tmp/unused.npy", "<f4", {int64_t(1) << 62, 16}, f, sizeof f).ok());
  NpyArray fortran{"<f4", true, {2}, std::string(8, '\0')};
  EXPECT_FALSE(writeNpyFile("/tmp/unused.npy", fortran).ok());
}

/// A version 1.0 file with the given header text and data, for hand-made malformed inputs.
std::string withHeader(std::string_view header, std::string_view data = {}) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(char(header.size() & 0xff));
  out.push_back(char(header.size() >> 8));
  out += header;
  out += data;
  return out;
}

TEST(Npy, AcceptsPythonSpellingsOfTheHeader) {
  const char* headers[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n",
      "{\"shape\":(2,),\"descr\":\"<f4\",\"fortran_order\":False}",
      " { 'fortran_order' : False ,\t'shape' : ( 2 , ) , 'descr' : '<f4' } \n",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }\n",  // Python 2 numpy
  };
  for (const char* h : headers) {
    auto a = parseNpy(withHeader(h, std::string(8, 'x')));
    EXPECT_TRUE(a.ok()) << h << ": " << a.message();
  }
}

TEST(Npy, RejectsMalformedFiles) {
  std::string good(kNumpyF4);
  struct Bad {
    std::string bytes;
    std::string_view mentions;
  };
  std::vector<Bad> cases = {
      {"", "magic"},
      {"\x93NUMPX\x01\x00", "magic"},
      {std::string("\x93NUMPY\x04\x00\x10\x00", 10), "version"},
      {std::string("\x93NUMPY\x01\x01\x10\x00", 10), "version"},
      {std::string("\x93NUMPY\x01\x00\x10", 9), "truncated"},
      {std::string("\x93NUMPY\x02\x00\x10\x00\x00", 11), "truncated"},
      {good.substr(0, 60), "truncated"},
      {good.substr(0, good.size() - 1), "needs"},
      {good + "x", "needs"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), "needs"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"),
       "overflow"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
       "int64"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"), "negative"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }"), "trailing comma"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }"), "tuple"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (0x2,), }"), "shape"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (02,), }"), "leading zero"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (,), }"), "dimension"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1,, 2), }"), "dimension"},
      {withHeader("{'descr': '<f4', 'fortran_order': 0, 'shape': (), }"), "True or False"},
      {withHeader("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (), }"), "True or False"},
      {withHeader("{'descr': '<f4', 'shape': (), }"), "must have keys"},
      {withHeader("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}"),
       "twice"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}"),
       "unexpected key"},
      {withHeader("{'descr': '<f4' 'fortran_order': False, 'shape': ()}"), "expected ','"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': ()} junk"), "after"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': ()"), "expected ','"},
      {withHeader("{'descr: '<f4', 'fortran_order': False, 'shape': ()}"), "expected ':'"},
      {withHeader("{'descr': '<f\\x34', 'fortran_order': False, 'shape': ()}"), "escape"},
      {withHeader("{'descr': '<f4"), "unterminated"},
      {withHeader("{'descr': '" + std::string(1000, 'a') + "'}"), "too long"},
      {withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (3L,), }"), "needs"},
      {withHeader("{'descr': '<f4', "), "quoted string"},
      {withHeader("{'descr': '<q8', 'fortran_order': False, 'shape': (), }", "12345678"),
       "unsupported"},
      {withHeader("not a dict"), "'{'"},
      {withHeader(""), "'{'"},
  };
  std::string manyDims = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 65; ++i) manyDims += "1, ";
  cases.push_back({withHeader(manyDims + ")}"), "64 dimensions"});
  for (const Bad& c : cases) {
    auto a = parseNpy(c.bytes);
    ASSERT_FALSE(a.ok()) << "accepted: " << c.bytes;
    EXPECT_NE(a.message().find(c.mentions), std::string::npos)
        << "message '" << a.message() << "' should mention '" << c.mentions << "'";
  }
}

TEST(Npy, RandomCorruptionNeverCrashes) {
  // Flip, truncate and splice bytes of valid files: every result must be a value or an error.
  std::mt19937 rng(20240611);
  std::vector<std::string_view> seeds = {kNumpyF4, kI8Scalar, kU1Empty0x3,
                                         kF2V2,    kF8V3,     kLongShape};
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes(seeds[rng() % seeds.size()]);
    int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[at] = char(rng());
          break;
        case 1:
          bytes.resize(at);
          break;
        case 2:
          bytes.insert(at, 1, "(),:'\" 0123456789L{}TrueFalse\n"[rng() % 30]);
          break;
        default:
          bytes.erase(at, 1);
          break;
      }
    }
    auto a = parseNpy(bytes);
    if (a.ok()) {
      ++parsed;
      EXPECT_FALSE(a->fortranOrder);
    } else {
      EXPECT_FALSE(a.message().empty());
    }
  }
  EXPECT_GT(parsed, 0);  // some edits only touch data bytes or header padding
}

}  // namespace
}  // namespace kiln
