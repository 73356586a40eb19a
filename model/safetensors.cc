#include "model/safetensors.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "model/codecs.h"

namespace fp8attn::model {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error("safetensors " + path + ": " + why);
}

constexpr uint64_t kMaxHeader = 100ull << 20;  // the reference implementation's limit

struct Parsed {
  SafeTensors st;
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> offsets;
  uint64_t data_begin = 0;
};

Parsed parse_header(const std::string& path, std::ifstream& in) {
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (file_size < 8) fail(path, "shorter than the 8-byte header length");
  uint8_t len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > kMaxHeader) fail(path, "header length " + std::to_string(n) + " exceeds 100 MiB");
  if (n + 8 > file_size) {
    fail(path, "header length " + std::to_string(n) + " runs past the end of the file (" +
                   std::to_string(file_size) + " bytes)");
  }
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  if (!in) fail(path, "could not read the header");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail(path, "header is not a JSON object");

  Parsed p;
  p.data_begin = 8 + n;
  const uint64_t data_size = file_size - p.data_begin;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail(path, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) fail(path, "__metadata__[" + m.key() + "] is not a string");
        p.st.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets")) {
      fail(path, "tensor '" + name + "' lacks dtype, shape or data_offsets");
    }
    StTensor t;
    if (!v["dtype"].is_string()) fail(path, "tensor '" + name + "': dtype is not a string");
    try {
      t.dtype = dtype_from_name(v["dtype"].get<std::string>());
    } catch (const std::exception& e) {
      fail(path, "tensor '" + name + "': " + e.what());
    }
    if (!v["shape"].is_array()) fail(path, "tensor '" + name + "': shape is not a list");
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        fail(path, "tensor '" + name + "': shape holds a non-integer or negative dimension");
      }
      t.shape.push_back(d.get<int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned()) {
      fail(path, "tensor '" + name + "': data_offsets is not [begin, end]");
    }
    const uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    if (b > e || e > data_size) {
      fail(path, "tensor '" + name + "': data_offsets [" + std::to_string(b) + ", " +
                     std::to_string(e) + "] outside the data section of " +
                     std::to_string(data_size) + " bytes");
    }
    const uint64_t want = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype);
    if (e - b != want) {
      fail(path, "tensor '" + name + "': " + std::to_string(e - b) + " bytes for a shape that needs " +
                     std::to_string(want));
    }
    p.offsets.push_back({name, {b, e}});
    p.st.tensors.emplace(name, std::move(t));
  }
  // The data section must be covered exactly, without overlaps or holes (as the spec requires).
  auto sorted = p.offsets;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  uint64_t pos = 0;
  for (const auto& [name, be] : sorted) {
    if (be.first != pos) {
      fail(path, "tensor '" + name + "' starts at " + std::to_string(be.first) + ", expected " +
                     std::to_string(pos) + " (overlap or hole in the data section)");
    }
    pos = be.second;
  }
  if (pos != data_size) {
    fail(path, "data section has " + std::to_string(data_size) + " bytes, tensors cover " +
                   std::to_string(pos));
  }
  return p;
}

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::F8_E4M3: return "F8_E4M3";
    case DType::U8: return "U8";
    case DType::I8: return "I8";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
  }
  return "?";
}

DType dtype_from_name(const std::string& s) {
  for (DType t : {DType::BF16, DType::F16, DType::F32, DType::F64, DType::F8_E4M3, DType::U8,
                  DType::I8, DType::I32, DType::I64}) {
    if (s == dtype_name(t)) return t;
  }
  throw std::runtime_error("unsupported dtype '" + s + "'");
}

int dtype_size(DType t) {
  switch (t) {
    case DType::BF16: case DType::F16: return 2;
    case DType::F32: case DType::I32: return 4;
    case DType::F64: case DType::I64: return 8;
    case DType::F8_E4M3: case DType::U8: case DType::I8: return 1;
  }
  return 0;
}

int64_t StTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<float> StTensor::to_floats() const {
  const int64_t n = numel();
  if (static_cast<int64_t>(data.size()) != n * dtype_size(dtype)) {
    throw std::runtime_error("StTensor::to_floats: data size does not match the shape");
  }
  std::vector<float> out(n);
  const uint8_t* p = data.data();
  switch (dtype) {
    case DType::BF16:
      bf16_to_floats(reinterpret_cast<const uint16_t*>(p), out.data(), n);
      break;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
      break;
    case DType::F32: std::memcpy(out.data(), p, n * 4); break;
    case DType::F64:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(reinterpret_cast<const double*>(p)[i]);
      break;
    case DType::F8_E4M3: e4m3_to_floats(p, out.data(), n); break;
    case DType::U8: for (int64_t i = 0; i < n; ++i) out[i] = p[i]; break;
    case DType::I8:
      for (int64_t i = 0; i < n; ++i) out[i] = reinterpret_cast<const int8_t*>(p)[i];
      break;
    case DType::I32:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(reinterpret_cast<const int32_t*>(p)[i]);
      break;
    case DType::I64:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(reinterpret_cast<const int64_t*>(p)[i]);
      break;
  }
  return out;
}

StTensor StTensor::from_floats(const float* x, const std::vector<int64_t>& shape, DType dtype) {
  StTensor t;
  t.dtype = dtype;
  t.shape = shape;
  const int64_t n = t.numel();
  t.data.resize(n * dtype_size(dtype));
  uint8_t* p = t.data.data();
  auto sat = [](float v, double lo, double hi) {
    return std::isnan(v) ? 0.0 : std::clamp(std::nearbyint(static_cast<double>(v)), lo, hi);
  };
  switch (dtype) {
    case DType::BF16: floats_to_bf16(x, reinterpret_cast<uint16_t*>(p), n); break;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<uint16_t*>(p)[i] = float_to_fp16(x[i]);
      break;
    case DType::F32: std::memcpy(p, x, n * 4); break;
    case DType::F64:
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<double*>(p)[i] = x[i];
      break;
    case DType::F8_E4M3: floats_to_e4m3(x, p, n); break;
    case DType::U8: for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(sat(x[i], 0, 255)); break;
    case DType::I8:
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(sat(x[i], -128, 127));
      break;
    case DType::I32:
      for (int64_t i = 0; i < n; ++i)
        reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(sat(x[i], -2147483648.0, 2147483647.0));
      break;
    case DType::I64:
      for (int64_t i = 0; i < n; ++i)
        reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(sat(x[i], -9.2e18, 9.2e18));
      break;
  }
  return t;
}

StTensor StTensor::from_raw(const void* x, const std::vector<int64_t>& shape, DType dtype) {
  StTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.data.resize(t.numel() * dtype_size(dtype));
  if (!t.data.empty()) std::memcpy(t.data.data(), x, t.data.size());
  return t;
}

const StTensor& SafeTensors::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) {
    std::string have;
    for (const auto& [k, v] : tensors) have += (have.empty() ? "" : ", ") + k;
    throw std::runtime_error("safetensors: no tensor '" + name + "' (has: " + have + ")");
  }
  return it->second;
}

SafeTensors read_safetensors_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  return parse_header(path, in).st;
}

SafeTensors read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  Parsed p = parse_header(path, in);
  for (const auto& [name, be] : p.offsets) {
    StTensor& t = p.st.tensors.at(name);
    t.data.resize(be.second - be.first);
    in.seekg(static_cast<std::streamoff>(p.data_begin + be.first));
    in.read(reinterpret_cast<char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
    if (!in) fail(path, "could not read the data of tensor '" + name + "'");
  }
  return std::move(p.st);
}

void write_safetensors(const std::string& path, const SafeTensors& file) {
  nlohmann::json j = nlohmann::json::object();
  if (!file.metadata.empty()) j["__metadata__"] = file.metadata;
  uint64_t off = 0;
  for (const auto& [name, t] : file.tensors) {
    if (name == "__metadata__") throw std::runtime_error("safetensors: '__metadata__' is reserved");
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype);
    if (t.data.size() != bytes) {
      throw std::runtime_error("safetensors " + path + ": tensor '" + name +
                               "' holds " + std::to_string(t.data.size()) + " bytes, shape needs " +
                               std::to_string(bytes));
    }
    j[name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  std::string header = j.dump();
  header.append((8 - header.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, "cannot open for writing");
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const auto& [name, t] : file.tensors) {
    out.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
  }
  if (!out) fail(path, "write failed");
}

}  // namespace fp8attn::model
