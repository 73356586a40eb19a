// The few BLAS calls the model makes (OpenBLAS), row-major. The model parallelizes over heads
// and query tiles with OpenMP, so BLAS itself runs single-threaded (blas_single_thread()).
#ifndef FP8ATTN_MODEL_BLAS_H_
#define FP8ATTN_MODEL_BLAS_H_

namespace fp8attn::model {

// C (m x n, ldc) = alpha * A (m x k, lda) * B^T (B is n x k, ldb) + beta * C.
void gemm_nt(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
             float beta, float* c, int ldc);
void gemm_nt(int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
             double beta, double* c, int ldc);
// C (m x n) = alpha * A (m x k) * B (k x n) + beta * C.
void gemm_nn(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
             float beta, float* c, int ldc);
void gemm_nn(int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
             double beta, double* c, int ldc);

// Makes BLAS calls run on the calling thread only (the model's OpenMP loops provide parallelism).
void blas_single_thread();

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_BLAS_H_
