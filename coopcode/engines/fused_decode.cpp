// One decode step of a Qwen2/Llama-style model for a single row, in one call: every layer's
// norms, products, rotary, attention over the row's slot of the KV cache and the MLP, then
// the vocabulary head. See fused_decode.py for why and where it is used.
//
// One OpenMP team for the whole token: the threads split each product's output rows and
// meet at spinning barriers between the phases of a layer (5 per layer), so no worker falls
// asleep and wakes again between the ~170 small operations an eager forward runs. Each
// thread keeps its own copy of the residual stream and recomputes the (tiny) norms itself,
// which saves barriers. Weights are bf16; every product's input is rounded to bf16 (as in a
// bf16 model, and as the engine's bf16 copy of an fp32 model does) and accumulates in fp32.
// Kernels: avx512_bf16 (dot products of bf16 pairs), AVX-512, AVX2+FMA, chosen by the caller.
#include <torch/extension.h>

#include <immintrin.h>
#include <omp.h>
#include <sched.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
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

// ---- y[r] = W[r] . x for rows [r0, r1) of a bf16 matrix with n columns --------------------
// `xk`: the input (rounded to bf16) in the kernel's own layout (`arrange`), `xf`: as floats.
// One row at a time, read front to back: with the 0.5B model's short rows (896 columns) that
// streamed the weights up to 1.3-2x faster than 4 rows interleaved (measured, see
// BENCHMARKS.md "The fused one-token step").

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

__attribute__((target("avx512f,avx512bw,avx512bf16")))
void rows_avx512bf16(const bf16* W, const void* xk, const float* xf, float* y, int64_t r0,
                     int64_t r1, int64_t n) {
  const bf16* xb = static_cast<const bf16*>(xk);
  const int64_t n4 = n / 128 * 128, nv = n / 32 * 32;
  for (int64_t r = r0; r < r1; ++r) {
    const bf16* w = W + r * n;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i < n4; i += 128) {
      a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(w + i), (__m512bh)_mm512_loadu_si512(xb + i));
      a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_loadu_si512(w + i + 32), (__m512bh)_mm512_loadu_si512(xb + i + 32));
      a2 = _mm512_dpbf16_ps(a2, (__m512bh)_mm512_loadu_si512(w + i + 64), (__m512bh)_mm512_loadu_si512(xb + i + 64));
      a3 = _mm512_dpbf16_ps(a3, (__m512bh)_mm512_loadu_si512(w + i + 96), (__m512bh)_mm512_loadu_si512(xb + i + 96));
    }
    for (; i < nv; i += 32)
      a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(w + i), (__m512bh)_mm512_loadu_si512(xb + i));
    y[r] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) +
           dot_tail(w, xf, nv, n);
  }
}

__attribute__((target("avx512f,avx512bw")))
void rows_avx512(const bf16* W, const void* xk, const float* xf, float* y, int64_t r0, int64_t r1,
                 int64_t n) {
  const float* xa = static_cast<const float*>(xk);  // per 32: 16 even, 16 odd elements
  const int64_t n2 = n / 64 * 64, nv = n / 32 * 32;
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t r = r0; r < r1; ++r) {
    const bf16* w = W + r * n;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i < n2; i += 64) {
      const __m512i u = _mm512_loadu_si512(w + i), v = _mm512_loadu_si512(w + i + 32);
      a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(u, 16)), _mm512_loadu_ps(xa + i), a0);
      a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(u, high)), _mm512_loadu_ps(xa + i + 16), a1);
      a2 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), _mm512_loadu_ps(xa + i + 32), a2);
      a3 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v, high)), _mm512_loadu_ps(xa + i + 48), a3);
    }
    for (; i < nv; i += 32) {
      const __m512i u = _mm512_loadu_si512(w + i);
      a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(u, 16)), _mm512_loadu_ps(xa + i), a0);
      a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(u, high)), _mm512_loadu_ps(xa + i + 16), a1);
    }
    y[r] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) +
           dot_tail(w, xf, nv, n);
  }
}

__attribute__((target("avx2,fma")))
inline float hsum_avx2(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma")))
void rows_avx2(const bf16* W, const void* xk, const float* xf, float* y, int64_t r0, int64_t r1,
               int64_t n) {
  const float* xa = static_cast<const float*>(xk);  // per 16: 8 even, 8 odd elements
  const int64_t n2 = n / 32 * 32, nv = n / 16 * 16;
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t r = r0; r < r1; ++r) {
    const bf16* w = W + r * n;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i < n2; i += 32) {
      const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i));
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i + 16));
      a0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(u, 16)), _mm256_loadu_ps(xa + i), a0);
      a1 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(u, high)), _mm256_loadu_ps(xa + i + 8), a1);
      a2 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), _mm256_loadu_ps(xa + i + 16), a2);
      a3 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v, high)), _mm256_loadu_ps(xa + i + 24), a3);
    }
    for (; i < nv; i += 16) {
      const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i));
      a0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(u, 16)), _mm256_loadu_ps(xa + i), a0);
      a1 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(u, high)), _mm256_loadu_ps(xa + i + 8), a1);
    }
    y[r] = hsum_avx2(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))) +
           dot_tail(w, xf, nv, n);
  }
}

using RowsFn = void (*)(const bf16*, const void*, const float*, float*, int64_t, int64_t, int64_t);

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
  const float* bias = nullptr;  // fp32, or null
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
    rows_ = isa >= 2 ? rows_avx512bf16 : isa == 1 ? rows_avx512 : rows_avx2;
    level_ = isa;
    block_ = isa == 1 ? 32 : 16;
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
  }

  // The logits [1, vocab] (fp32) of `token` at `pos` in cache slot `slot`; writes the token's
  // keys and values into the cache (per layer [slots, kv_heads, length, head_dim]).
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

  at::Tensor step(int64_t token, int64_t pos, int64_t slot, std::vector<at::Tensor> cache_k,
                  std::vector<at::Tensor> cache_v, int64_t threads, int64_t adapter) {
    const Lora* lora = nullptr;
    if (adapter >= 0) {
      auto found = adapters_.find(adapter);
      TORCH_CHECK(found != adapters_.end(), "adapter not registered");
      lora = found->second.data();
    }
    TORCH_CHECK(cache_k.size() == layers_.size() && cache_v.size() == layers_.size(),
                "one key and one value cache per layer");
    TORCH_CHECK(cache_k[0].size(2) > pos, "position past the cache's length");
    at::Tensor logits = at::empty({1, head_.out}, at::kFloat);
    const bool bf16_cache = cache_k[0].scalar_type() == at::kBFloat16;
    {
      pybind11::gil_scoped_release nogil;
      if (bf16_cache) {
        run<bf16>(token, pos, slot, cache_k, cache_v, threads, lora, logits.data_ptr<float>());
      } else {
        TORCH_CHECK(cache_k[0].scalar_type() == at::kFloat, "a bf16 or fp32 cache");
        run<float>(token, pos, slot, cache_k, cache_v, threads, lora, logits.data_ptr<float>());
      }
    }
    return logits;
  }

 private:
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

  // This thread's rows of y = W x + bias (+ the adapter's delta, `ax`: scratch of its rank).
  void product(const Linear& L, const Lora* lora, const void* xk, const float* xf, float* y,
               float* ax, int t, int T) const {
    int64_t a, b;
    split(L.out, t, T, &a, &b);
    rows_(L.w, xk, xf, y, a, b, L.in);
    if (L.bias)
      for (int64_t r = a; r < b; ++r) y[r] += L.bias[r];
    if (lora == nullptr || lora->a == nullptr || a == b) return;
    for (int64_t j = 0; j < lora->rank; ++j) {  // A x: every thread (it is small)
      const float* row = lora->a + j * L.in;
      float s = 0.f;
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < L.in; ++i) s += row[i] * xf[i];
      ax[j] = s * lora->scale;
    }
    for (int64_t r = a; r < b; ++r) {
      const float* row = lora->b + r * lora->rank;
      float s = 0.f;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < lora->rank; ++j) s += row[j] * ax[j];
      y[r] += s;
    }
  }

  template <typename C>
  void run(int64_t token, int64_t pos, int64_t slot, const std::vector<at::Tensor>& cache_k,
           const std::vector<at::Tensor>& cache_v, int64_t threads, const Lora* lora,
           float* logits) {
    int64_t rank = 0;
    if (lora)
      for (size_t i = 0; i < kProjections * layers_.size(); ++i) rank = std::max(rank, lora[i].rank);
    const int64_t H = hidden_, hd = head_dim_, nq = heads_ * hd, nkv = kv_heads_ * hd;
    const int64_t inter = layers_.empty() ? 0 : layers_[0].gate.out;
    const int64_t width = std::max({H, nq, inter});
    std::vector<float> q(nq), k(nkv), v(nkv), attn(nq), o(H), act(inter), d(H);
    std::vector<const C*> kc(layers_.size()), vc(layers_.size());
    std::vector<C*> kw(layers_.size()), vw(layers_.size());
    const int64_t length = cache_k[0].size(2);
    for (size_t l = 0; l < layers_.size(); ++l) {
      kw[l] = reinterpret_cast<C*>(cache_k[l].data_ptr()) + slot * kv_heads_ * length * hd;
      vw[l] = reinterpret_cast<C*>(cache_v[l].data_ptr()) + slot * kv_heads_ * length * hd;
    }
    // cos/sin of this position (HF's rotary: the two halves of a head rotate together)
    std::vector<float> cs(hd / 2), sn(hd / 2);
    for (int64_t j = 0; j < hd / 2; ++j) {
      const float ang = static_cast<float>(pos) * inv_freq_[j];
      cs[j] = std::cos(ang) * rope_scaling_;
      sn[j] = std::sin(ang) * rope_scaling_;
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int group = static_cast<int>(heads_ / kv_heads_);
    SpinBarrier barrier;

#pragma omp parallel num_threads(static_cast<int>(threads))
    {
      const int t = omp_get_thread_num();
      const int T = omp_get_num_threads();
#pragma omp single
      barrier.threads = T;  // (an implicit barrier follows)
      std::vector<float> h(H), xf(width), scores(pos + 1);
      std::vector<bf16> xb(width);
      std::vector<float> xa(width);
      const void* xk = level_ >= 2 ? static_cast<const void*>(xb.data()) : xa.data();
      auto ready = [&](int64_t n) {  // the input in the kernel's layout
        if (level_ < 2) arrange(xf.data(), n, block_, xa.data());
      };
      std::vector<float> gv(inter), uv(inter), ax(rank);
      const bf16* e = reinterpret_cast<const bf16*>(embed_.data_ptr()) + token * H;
      if (embed_.scalar_type() == at::kBFloat16) {
        for (int64_t i = 0; i < H; ++i) h[i] = from_bf16(e[i]);
      } else {
        const float* ef = embed_.data_ptr<float>() + token * H;
        for (int64_t i = 0; i < H; ++i) h[i] = ef[i];
      }
      for (size_t l = 0; l < layers_.size(); ++l) {
        const Layer& L = layers_[l];
        const Lora* ll = lora ? lora + kProjections * l : nullptr;
        auto lo = [ll](int p) { return ll ? ll + p : nullptr; };
        rms_round(h.data(), L.ln1, eps_, H, xf.data(), xb.data());
        ready(H);
        product(L.q, lo(0), xk, xf.data(), q.data(), ax.data(), t, T);
        product(L.k, lo(1), xk, xf.data(), k.data(), ax.data(), t, T);
        product(L.v, lo(2), xk, xf.data(), v.data(), ax.data(), t, T);
        barrier.wait();
        for (int64_t g = t; g < kv_heads_; g += T) {  // this thread's key heads
          float* kh = k.data() + g * hd;
          for (int64_t j = 0; j < hd / 2; ++j) {
            const float a = kh[j], b = kh[j + hd / 2];
            kh[j] = a * cs[j] - b * sn[j];
            kh[j + hd / 2] = b * cs[j] + a * sn[j];
          }
          C* kdst = kw[l] + (g * length + pos) * hd;
          C* vdst = vw[l] + (g * length + pos) * hd;
          for (int64_t j = 0; j < hd; ++j) {
            kdst[j] = cache_put<C>(kh[j]);
            vdst[j] = cache_put<C>(v[g * hd + j]);
          }
          const C* kbase = kw[l] + g * length * hd;
          const C* vbase = vw[l] + g * length * hd;
          for (int hq = 0; hq < group; ++hq) {
            float* qh = q.data() + (g * group + hq) * hd;
            for (int64_t j = 0; j < hd / 2; ++j) {
              const float a = qh[j], b = qh[j + hd / 2];
              qh[j] = a * cs[j] - b * sn[j];
              qh[j + hd / 2] = b * cs[j] + a * sn[j];
            }
            float best = -INFINITY;
            for (int64_t p = 0; p <= pos; ++p) {
              const C* kp = kbase + p * hd;
              float s = 0.f;
#pragma omp simd reduction(+ : s)
              for (int64_t j = 0; j < hd; ++j) s += qh[j] * cache_get<C>(kp + j);
              scores[p] = s * scale;
              best = std::max(best, scores[p]);
            }
            float total = 0.f;
            for (int64_t p = 0; p <= pos; ++p) total += (scores[p] = std::exp(scores[p] - best));
            float* out = attn.data() + (g * group + hq) * hd;
            for (int64_t j = 0; j < hd; ++j) out[j] = 0.f;
            for (int64_t p = 0; p <= pos; ++p) {
              const float w = scores[p] / total;
              const C* vp = vbase + p * hd;
#pragma omp simd
              for (int64_t j = 0; j < hd; ++j) out[j] += w * cache_get<C>(vp + j);
            }
          }
        }
        barrier.wait();
        round_vec(attn.data(), nq, xf.data(), xb.data());
        ready(nq);
        product(L.o, lo(3), xk, xf.data(), o.data(), ax.data(), t, T);
        barrier.wait();
        for (int64_t i = 0; i < H; ++i) h[i] += o[i];
        rms_round(h.data(), L.ln2, eps_, H, xf.data(), xb.data());
        ready(H);
        product(L.gate, lo(4), xk, xf.data(), gv.data(), ax.data(), t, T);
        product(L.up, lo(5), xk, xf.data(), uv.data(), ax.data(), t, T);
        {
          int64_t a, b;
          split(inter, t, T, &a, &b);  // the rows this thread's products wrote
          for (int64_t r = a; r < b; ++r) act[r] = gv[r] / (1.0f + std::exp(-gv[r])) * uv[r];
        }
        barrier.wait();
        round_vec(act.data(), inter, xf.data(), xb.data());
        ready(inter);
        product(L.down, lo(6), xk, xf.data(), d.data(), ax.data(), t, T);
        barrier.wait();
        for (int64_t i = 0; i < H; ++i) h[i] += d[i];
      }
      rms_round(h.data(), norm_, eps_, H, xf.data(), xb.data());
      ready(H);
      product(head_, nullptr, xk, xf.data(), logits, ax.data(), t, T);
    }
  }

  std::vector<at::Tensor> held_;
  at::Tensor embed_;
  const float* norm_ = nullptr;
  const float* inv_freq_ = nullptr;
  Linear head_;
  std::vector<Layer> layers_;
  int64_t heads_, kv_heads_, head_dim_, hidden_ = 0;
  float eps_, rope_scaling_;
  RowsFn rows_;
  int64_t level_ = 0, block_ = 16;
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
      .def("step", &FusedDecoder::step);
}
