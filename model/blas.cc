#include "model/blas.h"

#include <mutex>

extern "C" {
// Declared here rather than through cblas.h: Debian's cblas.h is an alternative that may point
// at the reference BLAS, whose header lacks openblas_set_num_threads.
enum { kRowMajor = 101, kNoTrans = 111, kTrans = 112 };
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);
void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double* a,
                 int lda, const double* b, int ldb, double beta, double* c, int ldc);
void openblas_set_num_threads(int n);
}

namespace fp8attn::model {

void gemm_nt(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
             float beta, float* c, int ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(kRowMajor, kNoTrans, kTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm_nt(int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
             double beta, double* c, int ldc) {
  if (m == 0 || n == 0) return;
  cblas_dgemm(kRowMajor, kNoTrans, kTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm_nn(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
             float beta, float* c, int ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm_nn(int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
             double beta, double* c, int ldc) {
  if (m == 0 || n == 0) return;
  cblas_dgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_single_thread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

}  // namespace fp8attn::model
