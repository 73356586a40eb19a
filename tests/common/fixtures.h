// The committed captured fixture: data/fixtures/*.safetensors (BF16 q, k, v (1, s, h, 128)),
// found through the repository's root, which no test binary has compiled in: CTest runs every
// test in the repository root (tests/CMakeLists.txt), and a test binary run by hand finds the
// root from any folder inside the repository (build/tests/, the root itself).
#pragma once
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace fp8attn::test {

// The nearest folder, from the working directory up, that holds data/captures.json; throws (the
// test fails, naming the folder it started from) when there is none.
inline std::filesystem::path repo_root() {
  namespace fs = std::filesystem;
  const fs::path start = fs::current_path();
  for (fs::path p = start;; p = p.parent_path()) {
    if (fs::is_regular_file(p / "data" / "captures.json")) return p;
    if (p == p.root_path() || p.empty()) break;
  }
  throw std::runtime_error("no fp8attn repository (a folder holding data/captures.json) at or above " +
                           start.string() + ": run the test from inside the repository (CTest does)");
}

// Every .safetensors file under data/fixtures, sorted; empty when the folder is missing.
inline std::vector<std::filesystem::path> captured_fixture_files() {
  const std::filesystem::path dir = repo_root() / "data" / "fixtures";
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace fp8attn::test
