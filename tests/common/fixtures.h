// The committed captured fixture: data/fixtures/*.safetensors (BF16 q, k, v (1, s, h, 128)).
#pragma once
#include <algorithm>
#include <filesystem>
#include <vector>

namespace fp8attn::test {

// Every .safetensors file under data/fixtures, sorted; empty when the folder is missing.
inline std::vector<std::filesystem::path> captured_fixture_files() {
  const std::filesystem::path dir = std::filesystem::path(FP8ATTN_SOURCE_DIR) / "data" / "fixtures";
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace fp8attn::test
