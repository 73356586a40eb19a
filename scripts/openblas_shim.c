/* A stand-in libopenblas.so.0 for the GPU machine, which may have no OpenBLAS: the GPU test
 * executables link the CPU model (model/blas.cc), which calls only cblas_sgemm, cblas_dgemm
 * (row-major, A * B or A * B^T) and openblas_set_num_threads. Real OpenBLAS is 36 MB with its
 * Fortran runtime, too much for the 64 MiB carried to the GPU machine; this is 20 KB.
 * scripts/stage_gpu.sh builds it into .carry/fallback/openblas/, and scripts/gpu_session.sh
 * puts that folder on LD_LIBRARY_PATH only when the machine has no libopenblas.so.0.
 * Plain loops: the GPU tests use the model only on small shapes. */
#include <stdio.h>
#include <stdlib.h>

enum { kRowMajor = 101, kNoTrans = 111 };

#define GEMM(NAME, T)                                                                      \
  void NAME(int order, int ta, int tb, int m, int n, int k, T alpha, const T* a, int lda,  \
            const T* b, int ldb, T beta, T* c, int ldc) {                                  \
    if (order != kRowMajor) {                                                              \
      fprintf(stderr, "openblas_shim: only row-major " #NAME " is implemented\n");         \
      abort();                                                                             \
    }                                                                                      \
    for (int i = 0; i < m; ++i) {                                                          \
      T* crow = c + (long)i * ldc;                                                         \
      for (int j = 0; j < n; ++j) crow[j] = beta == 0 ? (T)0 : beta * crow[j];             \
      for (int p = 0; p < k; ++p) {                                                        \
        const T aip = alpha * (ta == kNoTrans ? a[(long)i * lda + p] : a[(long)p * lda + i]); \
        if (tb == kNoTrans) {                                                              \
          const T* brow = b + (long)p * ldb;                                               \
          for (int j = 0; j < n; ++j) crow[j] += aip * brow[j];                            \
        } else {                                                                           \
          for (int j = 0; j < n; ++j) crow[j] += aip * b[(long)j * ldb + p];               \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
  }

GEMM(cblas_sgemm, float)
GEMM(cblas_dgemm, double)

void openblas_set_num_threads(int n) { (void)n; }
