// safetensors: round trip of every dtype and the metadata; clear errors on malformed files.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "model/codecs.h"
#include "model/safetensors.h"

namespace fm = fp8attn::model;

namespace {

std::string temp_path(const std::string& name) {
  return (::testing::TempDir() + "fp8attn_" + name);
}

void write_raw(const std::string& path, const std::string& header, const std::string& data,
               uint64_t len_override = 0) {
  std::ofstream f(path, std::ios::binary);
  const uint64_t n = len_override ? len_override : header.size();
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>(n >> (8 * i)));
  f << header << data;
}

void expect_error(const std::string& path, const std::string& needle) {
  try {
    fm::read_safetensors(path);
    FAIL() << "no error for " << path;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(SafeTensors, RoundTripEveryDtype) {
  const std::vector<float> x = {0.0f, -1.5f, 3.25f, 100.0f, -448.0f, 7.0f};
  const std::vector<float> x8 = {0.0f, -1.5f, 3.25f, 96.0f, -448.0f, 7.0f};  // E4M3: 100 -> 96
  const std::vector<float> xi = {0.0f, -2.0f, 3.0f, 100.0f, -448.0f, 7.0f};  // half to even
  fm::SafeTensors st;
  for (fm::DType t : {fm::DType::BF16, fm::DType::F16, fm::DType::F32, fm::DType::F64,
                      fm::DType::F8_E4M3, fm::DType::I8, fm::DType::I32, fm::DType::I64}) {
    st.tensors[fm::dtype_name(t)] = fm::StTensor::from_floats(x.data(), {2, 3}, t);
  }
  const std::vector<float> u = {0, 1, 2, 255, 7, 9};
  st.tensors["U8"] = fm::StTensor::from_floats(u.data(), {6}, fm::DType::U8);
  st.metadata["command"] = "fp8attn-eval --synthetic gaussian";
  st.metadata["commit"] = "abc";
  const std::string path = temp_path("roundtrip.safetensors");
  fm::write_safetensors(path, st);
  const fm::SafeTensors back = fm::read_safetensors(path);
  EXPECT_EQ(back.metadata, st.metadata);
  ASSERT_EQ(back.tensors.size(), st.tensors.size());
  for (const auto& [name, t] : st.tensors) {
    const fm::StTensor& b = back.at(name);
    EXPECT_EQ(b.dtype, t.dtype) << name;
    EXPECT_EQ(b.shape, t.shape) << name;
    EXPECT_EQ(b.data, t.data) << name;
  }
  // Values every dtype holds exactly come back exactly.
  for (const char* name : {"BF16", "F16", "F32", "F64"}) {
    const std::vector<float> y = back.at(name).to_floats();
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i]) << name << " " << i;
  }
  for (const char* name : {"F8_E4M3", "I32", "I64"}) {
    const std::vector<float> y = back.at(name).to_floats();
    const std::vector<float>& want = std::string(name) == "F8_E4M3" ? x8 : xi;
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], want[i]) << name << " " << i;
  }
  EXPECT_EQ(back.at("I8").to_floats()[4], -128.0f);  // saturated
  EXPECT_EQ(back.at("U8").to_floats()[3], 255.0f);
  // The header alone.
  const fm::SafeTensors h = fm::read_safetensors_header(path);
  EXPECT_EQ(h.at("F32").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(h.at("F32").data.empty());
  std::remove(path.c_str());
}

TEST(SafeTensors, HeaderIsAlignedToEightBytes) {
  fm::SafeTensors st;
  const float one = 1.0f;
  st.tensors["a"] = fm::StTensor::from_floats(&one, {1}, fm::DType::F32);
  const std::string path = temp_path("align.safetensors");
  fm::write_safetensors(path, st);
  std::ifstream f(path, std::ios::binary);
  uint8_t len[8];
  f.read(reinterpret_cast<char*>(len), 8);
  EXPECT_EQ(len[0] % 8, 0);
  std::remove(path.c_str());
}

TEST(SafeTensors, MalformedFilesFailClearly) {
  const std::string p = temp_path("bad.safetensors");
  { std::ofstream f(p, std::ios::binary); f << "abc"; }
  expect_error(p, "shorter than");
  write_raw(p, "{}", "", 1000);
  expect_error(p, "runs past the end");
  write_raw(p, "{not json", "");
  expect_error(p, "not valid JSON");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[2]}})", "");
  expect_error(p, "lacks dtype, shape or data_offsets");
  write_raw(p, R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0'));
  expect_error(p, "unsupported dtype 'C64'");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", std::string(4, '\0'));
  expect_error(p, "needs 8");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(4, '\0'));
  expect_error(p, "outside the data section");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0'));
  expect_error(p, "overlap or hole");
  write_raw(p, R"({"__metadata__":{"k":1}})", "");
  expect_error(p, "is not a string");
  expect_error(temp_path("does_not_exist.safetensors"), "cannot open");
  std::remove(p.c_str());
}
