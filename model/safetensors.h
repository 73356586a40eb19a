// safetensors files: reader and writer.
//
// Layout: 8-byte little-endian header length N, N bytes of JSON header, raw data. The header
// maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to
// the data section, end exclusive); "__metadata__" holds string -> string pairs. Malformed files
// raise std::runtime_error naming the file and the fault.
#ifndef FP8ATTN_MODEL_SAFETENSORS_H_
#define FP8ATTN_MODEL_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fp8attn::model {

enum class DType { BF16, F16, F32, F64, F8_E4M3, U8, I8, I32, I64 };

const char* dtype_name(DType t);             // "BF16", "F8_E4M3", ...
DType dtype_from_name(const std::string& s);  // throws on an unsupported name
int dtype_size(DType t);                      // bytes per element

struct StTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // little-endian raw bytes, row-major

  int64_t numel() const;
  // Every element converted to float (F64, I32, I64 rounded to float; F8_E4M3 decoded).
  std::vector<float> to_floats() const;
  // Converted from floats with RNE (integer dtypes: rint, saturated).
  static StTensor from_floats(const float* x, const std::vector<int64_t>& shape, DType dtype);
  // Raw bytes copied as given (x holds numel() elements of dtype).
  static StTensor from_raw(const void* x, const std::vector<int64_t>& shape, DType dtype);
};

struct SafeTensors {
  std::map<std::string, StTensor> tensors;
  std::map<std::string, std::string> metadata;

  const StTensor& at(const std::string& name) const;  // throws naming the missing tensor
  bool contains(const std::string& name) const { return tensors.count(name) != 0; }
};

SafeTensors read_safetensors(const std::string& path);
// Header and shapes only: no tensor data is read (data stays empty).
SafeTensors read_safetensors_header(const std::string& path);
void write_safetensors(const std::string& path, const SafeTensors& file);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_SAFETENSORS_H_
