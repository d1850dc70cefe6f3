// One decode step of a Qwen2/Llama-style model for 1 to 32 rows, in one call: every layer's
// norms, products, rotary, attention over each row's slot of the KV cache and the MLP, then
// the vocabulary head. See fused_decode.py for why and where it is used.
//
// One OpenMP team for the whole token: the threads split each product's output rows and
// meet at spinning barriers between the phases of a layer (5 per layer), so no worker falls
// asleep and wakes again between the ~170 small operations an eager forward runs. Each
// thread keeps its own copy of the residual stream and recomputes the (tiny) norms itself,
// which saves barriers. Weights are bf16; every product's input is rounded to bf16 (as in a
// bf16 model, and as the engine's bf16 copy of an fp32 model does) and accumulates in fp32.
// Kernels: AMX tiles, avx512_bf16 (dot products of bf16 pairs), AVX-512, AVX2+FMA, chosen by
// the caller; with avx512_bf16 a step of several rows multiplies by the weights packed in
// pairs (up to 32 rows; up to 64 on AMX tiles where the CPU has them), elsewhere each weight
// row is dotted with every input (up to 8 rows).
#include <torch/extension.h>

#include <immintrin.h>
#include <omp.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace {

using bf16 = uint16_t;

inline float from_bf16(bf16 h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline bf16 to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<bf16>(u >> 16);
}

// ---- y[k][r] = W[r] . x[k] for rows [r0, r1) of a bf16 matrix with n columns, inputs k < R --
// `xk`: the inputs (rounded to bf16) in the kernel's own layout (`arrange`), `xf`: as floats,
// input k at offset k * xs of both; y[k][r] at y + k * ys + r. One row at a time, read front
// to back, once for all R inputs: with the 0.5B model's short rows (896 columns) that
// streamed the weights up to 1.3-2x faster than 4 rows interleaved (measured, see
// BENCHMARKS.md "The fused one-token step"). U blocks a step per input, S accumulators per
// block (even and odd elements apart, or together): enough independent sums for one input,
// no more registers than the ISA has for eight.

float dot_tail(const bf16* w, const float* xf, int64_t i, int64_t n) {
  float s = 0.f;
  for (; i < n; ++i) s += from_bf16(w[i]) * xf[i];
  return s;
}

// Kernels without bf16 dot products widen bf16 pairs without shuffles: a 32-bit lane holding
// elements 2j (low half) and 2j+1 (high half) gives element 2j+1 as a float by masking the
// low half and element 2j by shifting it up. So the input is stored per block of `width`
// elements as its even elements, then its odd ones.
void arrange(const float* xf, int64_t n, int64_t width, float* xa) {
  const int64_t nv = n / width * width;
  for (int64_t c = 0; c < nv; c += width)
    for (int64_t j = 0; j < width / 2; ++j) {
      xa[c + j] = xf[c + 2 * j];
      xa[c + width / 2 + j] = xf[c + 2 * j + 1];
    }
}

using RowsFn = void (*)(const bf16* W, const void* xk, const float* xf, int64_t xs, float* y,
                        int64_t ys, int64_t r0, int64_t r1, int64_t n);

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512bf16")

template <int R, int U>
void rows_avx512bf16(const bf16* W, const void* xk, const float* xf, int64_t xs, float* y,
                     int64_t ys, int64_t r0, int64_t r1, int64_t n) {
  const bf16* xb = static_cast<const bf16*>(xk);
  constexpr int64_t kStep = 32 * U;
  const int64_t nu = n / kStep * kStep, nv = n / 32 * 32;
  for (int64_t r = r0; r < r1; ++r) {
    const bf16* w = W + r * n;
    __m512 acc[R][U];
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k)
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) acc[k][u] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i < nu; i += kStep) {
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) {
        const __m512bh wv = (__m512bh)_mm512_loadu_si512(w + i + 32 * u);
#pragma GCC unroll 8
        for (int k = 0; k < R; ++k)
          acc[k][u] = _mm512_dpbf16_ps(acc[k][u], wv,
                                       (__m512bh)_mm512_loadu_si512(xb + k * xs + i + 32 * u));
      }
    }
    for (; i < nv; i += 32) {
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(w + i);
#pragma GCC unroll 8
      for (int k = 0; k < R; ++k)
        acc[k][0] = _mm512_dpbf16_ps(acc[k][0], wv, (__m512bh)_mm512_loadu_si512(xb + k * xs + i));
    }
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k) {
      __m512 s = acc[k][0];
#pragma GCC unroll 4
      for (int u = 1; u < U; ++u) s = _mm512_add_ps(s, acc[k][u]);
      y[k * ys + r] = _mm512_reduce_add_ps(s) + dot_tail(w, xf + k * xs, nv, n);
    }
  }
}

template <int R, int U, int S>
void rows_avx512(const bf16* W, const void* xk, const float* xf, int64_t xs, float* y,
                 int64_t ys, int64_t r0, int64_t r1, int64_t n) {
  const float* xa = static_cast<const float*>(xk);  // per 32: 16 even, 16 odd elements
  constexpr int64_t kStep = 32 * U;
  const int64_t nu = n / kStep * kStep, nv = n / 32 * 32;
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t r = r0; r < r1; ++r) {
    const bf16* w = W + r * n;
    __m512 acc[R][U * S];
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k)
#pragma GCC unroll 8
      for (int u = 0; u < U * S; ++u) acc[k][u] = _mm512_setzero_ps();
    auto block = [&](int64_t at, int u) __attribute__((always_inline)) {
      const __m512i wv = _mm512_loadu_si512(w + at);
      const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(wv, 16));
      const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(wv, high));
#pragma GCC unroll 8
      for (int k = 0; k < R; ++k) {
        const float* x = xa + k * xs + at;
        acc[k][S * u] = _mm512_fmadd_ps(even, _mm512_loadu_ps(x), acc[k][S * u]);
        acc[k][S * u + S - 1] = _mm512_fmadd_ps(odd, _mm512_loadu_ps(x + 16), acc[k][S * u + S - 1]);
      }
    };
    int64_t i = 0;
    for (; i < nu; i += kStep)
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) block(i + 32 * u, u);
    for (; i < nv; i += 32) block(i, 0);
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k) {
      __m512 s = acc[k][0];
#pragma GCC unroll 8
      for (int u = 1; u < U * S; ++u) s = _mm512_add_ps(s, acc[k][u]);
      y[k * ys + r] = _mm512_reduce_add_ps(s) + dot_tail(w, xf + k * xs, nv, n);
    }
  }
}

// ---- Several inputs at once on avx512_bf16: y[k][o] = W[o] . x[k] from the weights packed
// in pairs along the input (`pack_pairs`: per block of 16 outputs, for each pair of input
// elements the 16 outputs' two weights side by side). Each vector of weights loaded serves
// every input through a broadcast of the input's pair, and each sum stays in its output's
// lane: no reductions, and the inputs are read as 4 bytes a step, not whole vectors. For 2-16
// rows the products run at 1.3-2.6x the row kernel above (a long input, as the MLP's down
// product's, overflows the L1 cache there); see BENCHMARKS.md "Greedy in flight against the
// machine's peak". Blocks [b0, b1) of 16 outputs, NB at a time; `out` outputs in all (the
// last block may hold fewer: its stores are masked).
inline void store_block(float* y, __m512 v, int64_t valid) {
  if (valid >= 16) {
    _mm512_storeu_ps(y, v);
  } else {
    _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << valid) - 1u), v);
  }
}

using PairsFn = void (*)(const uint32_t* Wp, const bf16* xb, int64_t xs, float* y, int64_t ys,
                         int64_t b0, int64_t b1, int64_t n, int64_t out);

template <int R, int NB>
void pairs_avx512bf16(const uint32_t* Wp, const bf16* xb, int64_t xs, float* y, int64_t ys,
                      int64_t b0, int64_t b1, int64_t n, int64_t out) {
  const int64_t np = n / 2;
  int64_t b = b0;
  for (; b + NB <= b1; b += NB) {
    __m512 acc[R][NB];
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k)
#pragma GCC unroll 4
      for (int u = 0; u < NB; ++u) acc[k][u] = _mm512_setzero_ps();
    const uint32_t* w = Wp + b * np * 16;
    for (int64_t p = 0; p < np; ++p) {
      __m512bh wv[NB];
#pragma GCC unroll 4
      for (int u = 0; u < NB; ++u)
        wv[u] = (__m512bh)_mm512_loadu_si512(w + (u * np + p) * 16);
#pragma GCC unroll 8
      for (int k = 0; k < R; ++k) {
        int32_t pair;  // input k's elements 2p and 2p + 1
        std::memcpy(&pair, xb + k * xs + 2 * p, sizeof pair);
        const __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 4
        for (int u = 0; u < NB; ++u) acc[k][u] = _mm512_dpbf16_ps(acc[k][u], wv[u], xv);
      }
    }
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k)
#pragma GCC unroll 4
      for (int u = 0; u < NB; ++u)
        store_block(y + k * ys + (b + u) * 16, acc[k][u], out - (b + u) * 16);
  }
  if constexpr (NB > 1) {
    if (b < b1) pairs_avx512bf16<R, 1>(Wp, xb, xs, y, ys, b, b1, n, out);
  }
}

#pragma GCC pop_options

// ---- Several inputs at once on AMX tiles (Intel's matrix unit, with bf16 products): the
// weights packed in pairs (`pack_pairs`) are, 16 pairs of inputs at a time, the layout of a
// tile's second operand as they stand (16 rows of 16 outputs' pairs, 64 bytes a row), so each
// product of 16 pairs x 16 outputs for up to 16 inputs is one instruction. Several inputs cost
// no more than one then: the weights stream at the memory's pace, as the single row's kernel
// reads them (on a 2-core Xeon, 5-8 rows took 86-92 ms a step on the pair kernel above and
// ~96 ms on oneDNN's products; 2-16 rows take 36-43 ms here, and a single row 35 against 41
// on its dot-product kernel, so it runs here too). Needs n a multiple of 32; blocks [b0, b1)
// of 16 outputs, two at a time; `out` outputs in all (the last block's stores masked).
struct TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Whether this process may use AMX tiles: the CPU has them and the kernel lets us (Linux
// asks each process to request the tiles' state first; oneDNN does the same).
bool amx_usable() {
  static const bool usable = [] {
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
}

// Rows [0, R) of a tile's 16 sums each (`c`, 16 floats a row) to y[k][16b ...], masked past
// `out` outputs.
__attribute__((target("avx512f")))
inline void store_sums(const float* c, int R, float* y, int64_t ys, int64_t b, int64_t out) {
  const int64_t valid = std::min<int64_t>(16, out - b * 16);
  const __mmask16 mask = static_cast<__mmask16>(valid >= 16 ? 0xffffu : (1u << valid) - 1u);
  for (int k = 0; k < R; ++k)
    _mm512_mask_storeu_ps(y + k * ys + b * 16, mask, _mm512_load_ps(c + 16 * k));
}

__attribute__((target("amx-tile,amx-bf16,avx512f")))
void pairs_amx(const uint32_t* Wp, const bf16* xb, int64_t xs, float* y, int64_t ys,
               int64_t b0, int64_t b1, int64_t n, int64_t out, int R) {
  TileConfig cfg;
  cfg.rows[0] = static_cast<uint8_t>(R);  // tmm0: the inputs, 32 elements of each
  cfg.colsb[0] = 64;
  for (int t : {1, 2}) {  // tmm1, tmm2: two blocks' weights, 16 pairs x 16 outputs
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  for (int t : {4, 5}) {  // tmm4, tmm5: the two blocks' sums, R x 16
    cfg.rows[t] = static_cast<uint8_t>(R);
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  const int64_t np = n / 2, chunks = n / 32, stride = xs * static_cast<int64_t>(sizeof(bf16));
  alignas(64) float c[16 * 16];
  int64_t b = b0;
  for (; b + 2 <= b1; b += 2) {
    const uint32_t* w0 = Wp + b * np * 16;
    const uint32_t* w1 = w0 + np * 16;
    _tile_zero(4);
    _tile_zero(5);
    for (int64_t t = 0; t < chunks; ++t) {
      _tile_loadd(0, xb + 32 * t, stride);
      _tile_loadd(1, w0 + 256 * t, 64);
      _tile_loadd(2, w1 + 256 * t, 64);
      _tile_dpbf16ps(4, 0, 1);
      _tile_dpbf16ps(5, 0, 2);
    }
    _tile_stored(4, c, 64);
    store_sums(c, R, y, ys, b, out);
    _tile_stored(5, c, 64);
    store_sums(c, R, y, ys, b + 1, out);
  }
  if (b < b1) {
    const uint32_t* w0 = Wp + b * np * 16;
    _tile_zero(4);
    for (int64_t t = 0; t < chunks; ++t) {
      _tile_loadd(0, xb + 32 * t, stride);
      _tile_loadd(1, w0 + 256 * t, 64);
      _tile_dpbf16ps(4, 0, 1);
    }
    _tile_stored(4, c, 64);
    store_sums(c, R, y, ys, b, out);
  }
  _tile_release();
}

// The same for 17 to 32 inputs: two tiles of inputs (16 and R - 16 rows) against each block's
// weights, four tiles of sums, so the weights are still read once for all the rows.
__attribute__((target("amx-tile,amx-bf16,avx512f")))
void pairs_amx32(const uint32_t* Wp, const bf16* xb, int64_t xs, float* y, int64_t ys,
                 int64_t b0, int64_t b1, int64_t n, int64_t out, int R) {
  const int R2 = R - 16;
  TileConfig cfg;
  cfg.rows[0] = 16;  // tmm0, tmm1: inputs 0-15 and 16-(R-1)
  cfg.rows[1] = static_cast<uint8_t>(R2);
  cfg.rows[2] = cfg.rows[3] = 16;  // tmm2, tmm3: two blocks' weights
  cfg.rows[4] = cfg.rows[5] = 16;  // tmm4, tmm5: inputs 0-15 x the two blocks
  cfg.rows[6] = cfg.rows[7] = static_cast<uint8_t>(R2);  // tmm6, tmm7: the rest x the two
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64;
  _tile_loadconfig(&cfg);
  const int64_t np = n / 2, chunks = n / 32, stride = xs * static_cast<int64_t>(sizeof(bf16));
  const bf16* xb2 = xb + 16 * xs;
  float* y2 = y + 16 * ys;
  alignas(64) float c[16 * 16];
  int64_t b = b0;
  for (; b < b1; b += 2) {
    const bool two = b + 1 < b1;
    const uint32_t* w0 = Wp + b * np * 16;
    const uint32_t* w1 = two ? w0 + np * 16 : w0;  // (a lone last block: computed twice, kept once)
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    for (int64_t t = 0; t < chunks; ++t) {
      _tile_loadd(0, xb + 32 * t, stride);
      _tile_loadd(1, xb2 + 32 * t, stride);
      _tile_loadd(2, w0 + 256 * t, 64);
      _tile_loadd(3, w1 + 256 * t, 64);
      _tile_dpbf16ps(4, 0, 2);
      _tile_dpbf16ps(5, 0, 3);
      _tile_dpbf16ps(6, 1, 2);
      _tile_dpbf16ps(7, 1, 3);
    }
    _tile_stored(4, c, 64);
    store_sums(c, 16, y, ys, b, out);
    _tile_stored(6, c, 64);
    store_sums(c, R2, y2, ys, b, out);
    if (two) {
      _tile_stored(5, c, 64);
      store_sums(c, 16, y, ys, b + 1, out);
      _tile_stored(7, c, 64);
      store_sums(c, R2, y2, ys, b + 1, out);
    }
  }
  _tile_release();
}

__attribute__((target("avx2,fma")))
inline float hsum_avx2(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

template <int R, int U, int S>
__attribute__((target("avx2,fma")))
void rows_avx2(const bf16* W, const void* xk, const float* xf, int64_t xs, float* y, int64_t ys,
               int64_t r0, int64_t r1, int64_t n) {
  const float* xa = static_cast<const float*>(xk);  // per 16: 8 even, 8 odd elements
  constexpr int64_t kStep = 16 * U;
  const int64_t nu = n / kStep * kStep, nv = n / 16 * 16;
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t r = r0; r < r1; ++r) {
    const bf16* w = W + r * n;
    __m256 acc[R][U * S];
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k)
#pragma GCC unroll 8
      for (int u = 0; u < U * S; ++u) acc[k][u] = _mm256_setzero_ps();
    auto block = [&](int64_t at, int u) __attribute__((always_inline)) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + at));
      const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(wv, 16));
      const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(wv, high));
#pragma GCC unroll 8
      for (int k = 0; k < R; ++k) {
        const float* x = xa + k * xs + at;
        acc[k][S * u] = _mm256_fmadd_ps(even, _mm256_loadu_ps(x), acc[k][S * u]);
        acc[k][S * u + S - 1] = _mm256_fmadd_ps(odd, _mm256_loadu_ps(x + 8), acc[k][S * u + S - 1]);
      }
    };
    int64_t i = 0;
    for (; i < nu; i += kStep)
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) block(i + 16 * u, u);
    for (; i < nv; i += 16) block(i, 0);
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k) {
      __m256 s = acc[k][0];
#pragma GCC unroll 8
      for (int u = 1; u < U * S; ++u) s = _mm256_add_ps(s, acc[k][u]);
      y[k * ys + r] = hsum_avx2(s) + dot_tail(w, xf + k * xs, nv, n);
    }
  }
}

// Up to 32 rows on tiles: one tile of inputs (`pairs_amx`) or two (`pairs_amx32`).
void pairs_amx_upto32(const uint32_t* Wp, const bf16* xb, int64_t xs, float* y, int64_t ys,
                      int64_t b0, int64_t b1, int64_t n, int64_t out, int R) {
  if (R <= 16) {
    pairs_amx(Wp, xb, xs, y, ys, b0, b1, n, out, R);
  } else {
    pairs_amx32(Wp, xb, xs, y, ys, b0, b1, n, out, R);
  }
}

constexpr int kRowKernels = 8;  // inputs the row kernels take at once
constexpr int kMaxRows = 32;    // rows a step takes where the weights are packed in pairs
constexpr int kMaxRowsAmx = 64;  // ... and multiplied on AMX tiles (the most on any CPU)

// The kernel for `rows` inputs at `level` (2 avx512_bf16, 1 AVX-512, 0 AVX2): one input gets
// 4 independent sums (as many as hide the latency), more inputs fewer each.
template <int R>
RowsFn rows_for(int64_t level) {
  constexpr int U = R == 1 ? 4 : R == 2 ? 2 : 1;
  if (level >= 2) return rows_avx512bf16<R, U>;
  if (level == 1) return rows_avx512<R, R == 1 ? 2 : 1, R <= 4 ? 2 : 1>;
  return rows_avx2<R, R == 1 ? 2 : 1, R <= 2 ? 2 : 1>;
}

// The pair kernel for `rows` inputs (1 to kRowKernels), `NB` blocks of 16 outputs at a time
// (0: 4 for up to 3 inputs, enough independent sums, else 2, as many as 8 inputs' registers
// allow).
template <int R, int NB>
constexpr PairsFn pairs_for() {
  return pairs_avx512bf16<R, (NB > 0 ? NB : R <= 3 ? 4 : 2)>;
}

template <int NB>
PairsFn pick_pairs(int rows) {
  switch (rows) {
    case 1: return pairs_for<1, NB>();
    case 2: return pairs_for<2, NB>();
    case 3: return pairs_for<3, NB>();
    case 4: return pairs_for<4, NB>();
    case 5: return pairs_for<5, NB>();
    case 6: return pairs_for<6, NB>();
    case 7: return pairs_for<7, NB>();
    default: return pairs_for<8, NB>();
  }
}

// The weights of a [out, n] bf16 matrix (n even) packed in pairs for the pair kernel:
// [ceil(out / 16)][n / 2][16] 32-bit words, word (b, p, j) holding W[16b + j][2p] in its low
// half and W[16b + j][2p + 1] in its high half (zero past the last output).
at::Tensor pack_pairs(const bf16* w, int64_t out, int64_t n) {
  const int64_t blocks = (out + 15) / 16, np = n / 2;
  at::Tensor packed = at::empty({blocks, np, 16}, at::kInt);
  uint32_t* p = reinterpret_cast<uint32_t*>(packed.data_ptr<int32_t>());
  // Written in order, 16 words (a cache line) per pair of inputs, read from the block's 16
  // rows side by side, and not zeroed first: one row at a time wrote a word per cache line.
  // (On the 0.5B model either way takes 0.1-0.2 s once the memory is the process's; an
  // engine's first copy costs 0.4-1.5 s more, the kernel handing out fresh pages.)
  at::parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t rows = std::min<int64_t>(16, out - b * 16);
      const bf16* row[16];
      for (int64_t j = 0; j < rows; ++j) row[j] = w + (b * 16 + j) * n;
      uint32_t* dst = p + b * np * 16;
      for (int64_t q = 0; q < np; ++q, dst += 16) {
        int64_t j = 0;
        for (; j < rows; ++j)
          dst[j] = static_cast<uint32_t>(row[j][2 * q]) | (static_cast<uint32_t>(row[j][2 * q + 1]) << 16);
        for (; j < 16; ++j) dst[j] = 0;  // past the last output
      }
    }
  });
  return packed;
}

RowsFn pick_rows(int64_t level, int rows) {
  switch (rows) {
    case 1: return rows_for<1>(level);
    case 2: return rows_for<2>(level);
    case 3: return rows_for<3>(level);
    case 4: return rows_for<4>(level);
    case 5: return rows_for<5>(level);
    case 6: return rows_for<6>(level);
    case 7: return rows_for<7>(level);
    default: return rows_for<8>(level);
  }
}

// A barrier the team spins on between the phases of one token (all threads are busy then);
// it yields the core after a while, in case a thread was descheduled.
struct SpinBarrier {
  std::atomic<int> arrived{0};
  std::atomic<int> generation{0};
  int threads = 1;

  void wait() {
    if (threads == 1) return;
    const int gen = generation.load(std::memory_order_acquire);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) == threads - 1) {
      arrived.store(0, std::memory_order_relaxed);
      generation.fetch_add(1, std::memory_order_release);
      return;
    }
    for (int spins = 0; generation.load(std::memory_order_acquire) == gen; ++spins) {
      if (spins < 20000) {
        _mm_pause();
      } else {
        sched_yield();
      }
    }
  }
};

struct Linear {
  const bf16* w = nullptr;
  const uint32_t* pairs = nullptr;  // the weights packed in pairs (`pack_pairs`), or null
  const float* bias = nullptr;      // fp32, or null
  int64_t out = 0, in = 0;
};

// A LoRA adapter's delta on one product: y += scale * B (A x), A [r, in] and B [out, r] fp32.
struct Lora {
  const float* a = nullptr;
  const float* b = nullptr;
  int64_t rank = 0;
  float scale = 0.f;
};

constexpr int kProjections = 7;  // q, k, v, o, gate, up, down

struct Layer {
  const float* ln1 = nullptr;
  const float* ln2 = nullptr;
  Linear q, k, v, o, gate, up, down;
};

inline void split(int64_t n, int t, int T, int64_t* a, int64_t* b) {
  // Rows in groups of 16 (a cache line of outputs: no two threads write one), as evenly as
  // that allows.
  const int64_t groups = (n + 15) / 16;
  *a = std::min(n, groups * t / T * 16);
  *b = std::min(n, groups * (t + 1) / T * 16);
}

inline void rms_round(const float* h, const float* w, float eps, int64_t n, float* xf, bf16* xb) {
  float ss = 0.f;
#pragma omp simd reduction(+ : ss)
  for (int64_t i = 0; i < n; ++i) ss += h[i] * h[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) {
    xb[i] = to_bf16(h[i] * scale * w[i]);
    xf[i] = from_bf16(xb[i]);
  }
}

inline void round_vec(const float* x, int64_t n, float* xf, bf16* xb) {
  for (int64_t i = 0; i < n; ++i) {
    xb[i] = to_bf16(x[i]);
    xf[i] = from_bf16(xb[i]);
  }
}

template <typename C>
inline float cache_get(const C* p);
template <>
inline float cache_get<bf16>(const bf16* p) { return from_bf16(*p); }
template <>
inline float cache_get<float>(const float* p) { return *p; }
template <typename C>
inline C cache_put(float x);
template <>
inline bf16 cache_put<bf16>(float x) { return to_bf16(x); }
template <>
inline float cache_put<float>(float x) { return x; }

class FusedDecoder {
 public:
  FusedDecoder(std::vector<at::Tensor> tensors, int64_t layers, int64_t heads, int64_t kv_heads,
               int64_t head_dim, double eps, double rope_scaling, int64_t isa)
      : held_(std::move(tensors)), heads_(heads), kv_heads_(kv_heads), head_dim_(head_dim),
        eps_(static_cast<float>(eps)), rope_scaling_(static_cast<float>(rope_scaling)) {
    // tensors: embed, final norm, head, inv_freq, then per layer: ln1, ln2,
    // q.w, q.b, k.w, k.b, v.w, v.b, o.w, o.b, gate.w, gate.b, up.w, up.b, down.w, down.b
    // (biases may be empty tensors).
    for (int r = 0; r < kRowKernels; ++r) {
      rows_[r] = pick_rows(isa, r + 1);
      pairs_[r] = pick_pairs<0>(r + 1);
      pairs2_[r] = pick_pairs<2>(r + 1);
    }
    level_ = isa;
    block_ = isa == 1 ? 32 : 16;
    amx_ = isa >= 3 && amx_usable();
    TORCH_CHECK(static_cast<int64_t>(held_.size()) == 4 + 16 * layers, "wrong tensor count");
    embed_ = held_[0];
    norm_ = held_[1].data_ptr<float>();
    head_ = linear(held_[2], at::Tensor());
    inv_freq_ = held_[3].data_ptr<float>();
    hidden_ = held_[2].size(1);
    for (int64_t l = 0; l < layers; ++l) {
      const at::Tensor* t = held_.data() + 4 + 16 * l;
      Layer L;
      L.ln1 = t[0].data_ptr<float>();
      L.ln2 = t[1].data_ptr<float>();
      L.q = linear(t[2], t[3]);
      L.k = linear(t[4], t[5]);
      L.v = linear(t[6], t[7]);
      L.o = linear(t[8], t[9]);
      L.gate = linear(t[10], t[11]);
      L.up = linear(t[12], t[13]);
      L.down = linear(t[14], t[15]);
      layers_.push_back(L);
    }
    // With bf16 dot products, a step of 2 or more rows multiplies by the weights packed in
    // pairs (a copy as large as the bf16 weights), and takes up to kMaxRows rows; every
    // product's input length must be even for it.
    max_rows_ = kRowKernels;
    if (isa >= 2) {
      std::vector<Linear*> all{&head_};
      for (Layer& L : layers_)
        for (Linear* p : {&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down}) all.push_back(p);
      bool even = true;
      for (const Linear* p : all) even = even && p->in % 2 == 0;
      if (even) {
        for (Linear* p : all) {
          packed_.push_back(pack_pairs(p->w, p->out, p->in));
          p->pairs = reinterpret_cast<const uint32_t*>(packed_.back().data_ptr<int32_t>());
        }
        max_rows_ = amx_ ? kMaxRowsAmx : kMaxRows;
      }
    }
  }

  int64_t max_rows() const { return max_rows_; }

  // Registers adapter `id`: per layer and product (q, k, v, o, gate, up, down) its A and B
  // (fp32, contiguous; empty tensors where the adapter leaves that product alone) and
  // scaling. The tensors are read at every step, not copied: a trainer's in-place updates
  // show at once.
  void set_adapter(int64_t id, std::vector<at::Tensor> ab, std::vector<double> scales) {
    TORCH_CHECK(ab.size() == 2 * scales.size() &&
                    scales.size() == kProjections * layers_.size(),
                "an A, a B and a scaling per layer and product");
    std::vector<Lora> lora(scales.size());
    for (size_t i = 0; i < scales.size(); ++i) {
      const at::Tensor& a = ab[2 * i];
      const at::Tensor& b = ab[2 * i + 1];
      if (a.numel() == 0) continue;
      TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat &&
                      a.is_contiguous() && b.is_contiguous() && a.size(0) == b.size(1),
                  "LoRA weights must be contiguous fp32 A [r, in] and B [out, r]");
      lora[i] = Lora{a.data_ptr<float>(), b.data_ptr<float>(), a.size(0),
                     static_cast<float>(scales[i])};
    }
    adapters_[id] = std::move(lora);
    adapter_tensors_[id] = std::move(ab);
  }

  void drop_adapter(int64_t id) {
    adapters_.erase(id);
    adapter_tensors_.erase(id);
  }

  // The logits [R, vocab] (fp32) of R rows' tokens, row i's `tokens[i]` at `pos[i]` in cache
  // slot `slots[i]` (distinct) under adapter `adapters[i]` (-1: the bare base); writes the
  // tokens' keys and values into the cache (per layer [slots, kv_heads, length, head_dim]).
  // Each weight is read once for all the rows (up to `max_rows()`).
  at::Tensor step(std::vector<int64_t> tokens, std::vector<int64_t> pos,
                  std::vector<int64_t> slots, std::vector<at::Tensor> cache_k,
                  std::vector<at::Tensor> cache_v, int64_t threads,
                  std::vector<int64_t> adapters) {
    const int R = static_cast<int>(tokens.size());
    TORCH_CHECK(R >= 1 && R <= max_rows_, "1 to ", max_rows_, " rows a step");
    TORCH_CHECK(pos.size() == tokens.size() && slots.size() == tokens.size() &&
                    adapters.size() == tokens.size(),
                "a token, a position, a slot and an adapter per row");
    TORCH_CHECK(cache_k.size() == layers_.size() && cache_v.size() == layers_.size(),
                "one key and one value cache per layer");
    const int64_t length = cache_k[0].size(2), slot_count = cache_k[0].size(0);
    const Lora* lora[kMaxRowsAmx] = {};
    for (int i = 0; i < R; ++i) {
      TORCH_CHECK(pos[i] >= 0 && pos[i] < length, "position past the cache's length");
      TORCH_CHECK(slots[i] >= 0 && slots[i] < slot_count, "no such cache slot");
      TORCH_CHECK(tokens[i] >= 0 && tokens[i] < embed_.size(0), "no such token");
      for (int j = 0; j < i; ++j) TORCH_CHECK(slots[j] != slots[i], "two rows in one slot");
      if (adapters[i] >= 0) {
        auto found = adapters_.find(adapters[i]);
        TORCH_CHECK(found != adapters_.end(), "adapter not registered");
        lora[i] = found->second.data();
      }
    }
    at::Tensor logits = at::empty({R, head_.out}, at::kFloat);
    const bool bf16_cache = cache_k[0].scalar_type() == at::kBFloat16;
    TORCH_CHECK(bf16_cache || cache_k[0].scalar_type() == at::kFloat, "a bf16 or fp32 cache");
    {
      pybind11::gil_scoped_release nogil;
      std::lock_guard<std::mutex> one_at_a_time(busy_);  // the scratch is the object's
      const Rows rows{R, tokens.data(), pos.data(), slots.data(), lora};
      if (bf16_cache) {
        run<bf16>(rows, cache_k, cache_v, threads, logits.data_ptr<float>());
      } else {
        run<float>(rows, cache_k, cache_v, threads, logits.data_ptr<float>());
      }
    }
    return logits;
  }

 private:
  struct Rows {
    int count;
    const int64_t* tokens;
    const int64_t* pos;
    const int64_t* slots;
    const Lora* const* lora;  // per row: its adapter's deltas (per layer and product), or null
  };

  static Linear linear(const at::Tensor& w, const at::Tensor& b) {
    TORCH_CHECK(w.scalar_type() == at::kBFloat16 && w.is_contiguous() && w.dim() == 2,
                "weights must be contiguous bf16 matrices");
    Linear L;
    L.w = reinterpret_cast<const bf16*>(w.data_ptr());
    L.out = w.size(0);
    L.in = w.size(1);
    if (b.defined() && b.numel() > 0) L.bias = b.data_ptr<float>();
    return L;
  }

  // This thread's rows of y[k] = W x[k] + bias (+ row k's adapter delta `lora[k]`; `ax`:
  // scratch of the largest rank) for the R inputs at stride xs, outputs at stride ys.
  void product(const Linear& L, const Lora* const* lora, int R, const void* xk, const float* xf,
               int64_t xs, float* y, int64_t ys, float* ax, int t, int T) const {
    int64_t a, b;
    split(L.out, t, T, &a, &b);
    if (a == b) return;
    if ((R > 1 || amx_) && L.pairs != nullptr) {
      const bf16* xb = static_cast<const bf16*>(xk);
      const int64_t b0 = a / 16, b1 = (b + 15) / 16;  // (a is a multiple of 16: `split`)
      if (amx_ && L.in % 32 == 0) {
        if (R <= 32) {
          pairs_amx_upto32(L.pairs, xb, xs, y, ys, b0, b1, L.in, L.out, R);
        } else {  // 32 rows at a time over each two blocks' weights (the passes after the
                  // first read them from the cache)
          for (int64_t c = b0; c < b1; c += 2)
            for (int g = 0; g < R; g += 32)
              pairs_amx_upto32(L.pairs, xb + g * xs, xs, y + g * ys, ys, c, std::min(c + 2, b1),
                               L.in, L.out, std::min(32, R - g));
        }
      } else if (R <= kRowKernels) {
        pairs_[R - 1](L.pairs, xb, xs, y, ys, b0, b1, L.in, L.out);
      } else {  // a pass of up to 8 rows at a time over each two blocks' weights (the
                // passes after the first read them from the cache)
        for (int64_t c = b0; c < b1; c += 2) {
          const int64_t e = std::min(c + 2, b1);
          for (int g = 0; g < R; g += kRowKernels)
            pairs2_[std::min(kRowKernels, R - g) - 1](L.pairs, xb + g * xs, xs, y + g * ys, ys, c,
                                                      e, L.in, L.out);
        }
      }
    } else {
      rows_[R - 1](L.w, xk, xf, xs, y, ys, a, b, L.in);
    }
    for (int k = 0; k < R; ++k) {
      float* yk = y + k * ys;
      if (L.bias)
        for (int64_t r = a; r < b; ++r) yk[r] += L.bias[r];
      const Lora* l = lora[k];
      if (l == nullptr || l->a == nullptr) continue;
      const float* x = xf + k * xs;
      for (int64_t j = 0; j < l->rank; ++j) {  // A x: every thread (it is small)
        const float* row = l->a + j * L.in;
        float s = 0.f;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < L.in; ++i) s += row[i] * x[i];
        ax[j] = s * l->scale;
      }
      for (int64_t r = a; r < b; ++r) {
        const float* row = l->b + r * l->rank;
        float s = 0.f;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < l->rank; ++j) s += row[j] * ax[j];
        yk[r] += s;
      }
    }
  }

  template <typename C>
  void run(const Rows& rows, const std::vector<at::Tensor>& cache_k,
           const std::vector<at::Tensor>& cache_v, int64_t threads, float* logits) {
    const int R = rows.count;
    int64_t rank = 0, last = 0;
    for (int k = 0; k < R; ++k) {
      last = std::max(last, rows.pos[k]);
      if (rows.lora[k])
        for (size_t i = 0; i < kProjections * layers_.size(); ++i)
          rank = std::max(rank, rows.lora[k][i].rank);
    }
    const int64_t H = hidden_, hd = head_dim_, nq = heads_ * hd, nkv = kv_heads_ * hd;
    const int64_t inter = layers_.empty() ? 0 : layers_[0].gate.out;
    const int64_t width = std::max({H, nq, inter});
    // Shared between the threads: each product's outputs, the rows' rotations.
    float* q = shared(0, R * nq);
    float* k = shared(1, R * nkv);
    float* v = shared(2, R * nkv);
    float* attn = shared(3, R * nq);
    float* o = shared(4, R * H);
    float* act = shared(5, R * inter);
    float* d = shared(6, R * H);
    float* cs = shared(7, R * hd / 2);
    float* sn = shared(8, R * hd / 2);
    const int64_t length = cache_k[0].size(2);
    const int64_t slot_size = kv_heads_ * length * hd;
    for (int r = 0; r < R; ++r)  // HF's rotary: the two halves of a head rotate together
      for (int64_t j = 0; j < hd / 2; ++j) {
        const float ang = static_cast<float>(rows.pos[r]) * inv_freq_[j];
        cs[r * hd / 2 + j] = std::cos(ang) * rope_scaling_;
        sn[r * hd / 2 + j] = std::sin(ang) * rope_scaling_;
      }
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int group = static_cast<int>(heads_ / kv_heads_);
    SpinBarrier barrier;
    if (static_cast<int64_t>(local_.size()) < threads) {
      local_.resize(threads);
      local_b_.resize(threads);
    }

#pragma omp parallel num_threads(static_cast<int>(threads))
    {
      const int t = omp_get_thread_num();
      const int T = omp_get_num_threads();
#pragma omp single
      barrier.threads = T;  // (an implicit barrier follows)
      // This thread's own: the rows' residual streams, the products' inputs (floats, bf16,
      // arranged), attention scores, the MLP's gate and up rows, LoRA's A x.
      std::vector<float>& mine = local_[t];
      const int64_t need = R * (H + 2 * width + 2 * inter) + last + 1 + rank;
      if (static_cast<int64_t>(mine.size()) < need) mine.resize(need);
      if (static_cast<int64_t>(local_b_[t].size()) < R * width) local_b_[t].resize(R * width);
      float* h = mine.data();
      float* xf = h + R * H;
      float* xa = xf + R * width;
      float* gv = xa + R * width;
      float* uv = gv + R * inter;
      float* scores = uv + R * inter;
      float* ax = scores + last + 1;
      bf16* xb = local_b_[t].data();
      const void* xk = level_ >= 2 ? static_cast<const void*>(xb) : xa;
      auto ready = [&](int64_t n) {  // the inputs in the kernel's layout
        if (level_ < 2)
          for (int r = 0; r < R; ++r) arrange(xf + r * width, n, block_, xa + r * width);
      };
      auto norm = [&](const float* weight) {  // every row's RMS norm, as bf16 inputs
        for (int r = 0; r < R; ++r)
          rms_round(h + r * H, weight, eps_, H, xf + r * width, xb + r * width);
        ready(H);
      };
      auto round_all = [&](const float* x, int64_t n) {
        for (int r = 0; r < R; ++r) round_vec(x + r * n, n, xf + r * width, xb + r * width);
        ready(n);
      };
      for (int r = 0; r < R; ++r) {
        float* hr = h + r * H;
        if (embed_.scalar_type() == at::kBFloat16) {
          const bf16* e = reinterpret_cast<const bf16*>(embed_.data_ptr()) + rows.tokens[r] * H;
          for (int64_t i = 0; i < H; ++i) hr[i] = from_bf16(e[i]);
        } else {
          const float* e = embed_.data_ptr<float>() + rows.tokens[r] * H;
          for (int64_t i = 0; i < H; ++i) hr[i] = e[i];
        }
      }
      const Lora* lo[kProjections][kMaxRowsAmx] = {};
      for (size_t l = 0; l < layers_.size(); ++l) {
        const Layer& L = layers_[l];
        for (int r = 0; r < R; ++r)
          for (int p = 0; p < kProjections; ++p)
            lo[p][r] = rows.lora[r] ? rows.lora[r] + kProjections * l + p : nullptr;
        C* kcache = reinterpret_cast<C*>(cache_k[l].data_ptr());
        C* vcache = reinterpret_cast<C*>(cache_v[l].data_ptr());
        norm(L.ln1);
        product(L.q, lo[0], R, xk, xf, width, q, nq, ax, t, T);
        product(L.k, lo[1], R, xk, xf, width, k, nkv, ax, t, T);
        product(L.v, lo[2], R, xk, xf, width, v, nkv, ax, t, T);
        barrier.wait();
        for (int64_t item = t; item < R * kv_heads_; item += T) {  // this thread's key heads
          const int r = static_cast<int>(item / kv_heads_);
          const int64_t g = item % kv_heads_, p_now = rows.pos[r];
          const float* c = cs + r * hd / 2;
          const float* s = sn + r * hd / 2;
          float* kh = k + r * nkv + g * hd;
          for (int64_t j = 0; j < hd / 2; ++j) {
            const float a = kh[j], b = kh[j + hd / 2];
            kh[j] = a * c[j] - b * s[j];
            kh[j + hd / 2] = b * c[j] + a * s[j];
          }
          C* kbase = kcache + rows.slots[r] * slot_size + g * length * hd;
          C* vbase = vcache + rows.slots[r] * slot_size + g * length * hd;
          for (int64_t j = 0; j < hd; ++j) {
            kbase[p_now * hd + j] = cache_put<C>(kh[j]);
            vbase[p_now * hd + j] = cache_put<C>(v[r * nkv + g * hd + j]);
          }
          for (int hq = 0; hq < group; ++hq) {
            float* qh = q + r * nq + (g * group + hq) * hd;
            for (int64_t j = 0; j < hd / 2; ++j) {
              const float a = qh[j], b = qh[j + hd / 2];
              qh[j] = a * c[j] - b * s[j];
              qh[j + hd / 2] = b * c[j] + a * s[j];
            }
            float best = -INFINITY;
            for (int64_t p = 0; p <= p_now; ++p) {
              const C* kp = kbase + p * hd;
              float dot = 0.f;
#pragma omp simd reduction(+ : dot)
              for (int64_t j = 0; j < hd; ++j) dot += qh[j] * cache_get<C>(kp + j);
              scores[p] = dot * scale;
              best = std::max(best, scores[p]);
            }
            float total = 0.f;
            for (int64_t p = 0; p <= p_now; ++p) total += (scores[p] = std::exp(scores[p] - best));
            float* out = attn + r * nq + (g * group + hq) * hd;
            for (int64_t j = 0; j < hd; ++j) out[j] = 0.f;
            for (int64_t p = 0; p <= p_now; ++p) {
              const float w = scores[p] / total;
              const C* vp = vbase + p * hd;
#pragma omp simd
              for (int64_t j = 0; j < hd; ++j) out[j] += w * cache_get<C>(vp + j);
            }
          }
        }
        barrier.wait();
        round_all(attn, nq);
        product(L.o, lo[3], R, xk, xf, width, o, H, ax, t, T);
        barrier.wait();
        for (int64_t i = 0; i < R * H; ++i) h[i] += o[i];
        norm(L.ln2);
        product(L.gate, lo[4], R, xk, xf, width, gv, inter, ax, t, T);
        product(L.up, lo[5], R, xk, xf, width, uv, inter, ax, t, T);
        {
          int64_t a, b;
          split(inter, t, T, &a, &b);  // the rows this thread's products wrote
          for (int r = 0; r < R; ++r)
            for (int64_t i = r * inter + a; i < r * inter + b; ++i)
              act[i] = gv[i] / (1.0f + std::exp(-gv[i])) * uv[i];
        }
        barrier.wait();
        round_all(act, inter);
        product(L.down, lo[6], R, xk, xf, width, d, H, ax, t, T);
        barrier.wait();
        for (int64_t i = 0; i < R * H; ++i) h[i] += d[i];
      }
      norm(norm_);
      const Lora* none[kMaxRowsAmx] = {};
      product(head_, none, R, xk, xf, width, logits, head_.out, ax, t, T);
    }
  }

  // Shared scratch buffer `which` of at least n floats (kept between steps).
  float* shared(int which, int64_t n) {
    std::vector<float>& b = shared_[which];
    if (static_cast<int64_t>(b.size()) < n) b.resize(n);
    return b.data();
  }

  std::vector<at::Tensor> held_;
  at::Tensor embed_;
  const float* norm_ = nullptr;
  const float* inv_freq_ = nullptr;
  Linear head_;
  std::vector<Layer> layers_;
  int64_t heads_, kv_heads_, head_dim_, hidden_ = 0;
  float eps_, rope_scaling_;
  RowsFn rows_[kRowKernels];
  PairsFn pairs_[kRowKernels];   // the pair kernels, as many blocks at a time as suit each
  PairsFn pairs2_[kRowKernels];  // two blocks at a time (the passes of more than 8 rows)
  std::vector<at::Tensor> packed_;  // the weights packed in pairs, or none
  int64_t max_rows_ = kRowKernels;
  int64_t level_ = 0, block_ = 16;
  bool amx_ = false;  // several rows' products on AMX tiles (`pairs_amx`)
  std::mutex busy_;
  std::vector<float> shared_[9];
  std::vector<std::vector<float>> local_;
  std::vector<std::vector<bf16>> local_b_;
  std::map<int64_t, std::vector<Lora>> adapters_;
  std::map<int64_t, std::vector<at::Tensor>> adapter_tensors_;
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  pybind11::class_<FusedDecoder>(m, "FusedDecoder")
      .def(pybind11::init<std::vector<at::Tensor>, int64_t, int64_t, int64_t, int64_t, double,
                          double, int64_t>())
      .def("set_adapter", &FusedDecoder::set_adapter)
      .def("drop_adapter", &FusedDecoder::drop_adapter)
      .def("step", &FusedDecoder::step)
      .def_property_readonly("max_rows", &FusedDecoder::max_rows);
  m.attr("MAX_ROWS") = kMaxRowsAmx;
}
