// exp for the kernels' hot loops (softmax rows, SiLU), 8 floats at a time with GCC's
// portable vector extensions (AVX when built for it, two SSE halves otherwise): libm's expf
// does not vectorise without -ffast-math. Cephes' expf: a degree-6 polynomial on
// [-ln2/2, ln2/2] and an exponent shift; relative error below 2e-7 over [-87, 88], inputs
// clamped to that range.
#pragma once

#include <cstdint>
#include <cstring>

namespace endure::model {

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }
inline v8f splat8(float x) { return v8f{} + x; }
inline float hsum8(v8f v) {  // a fixed order
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}
inline float hmax8(v8f v) {
  float m = v[0];
  for (int i = 1; i < 8; i++) m = v[i] > m ? v[i] : m;
  return m;
}
inline v8f max8(v8f a, v8f b) { return a > b ? a : b; }

inline v8f exp8(v8f x) {
  x = x < -87.0f ? splat8(-87.0f) : x;
  x = x > 88.0f ? splat8(88.0f) : x;
  v8f fx = x * 1.44269504088896341f + 0.5f;
  v8i i = __builtin_convertvector(fx, v8i);     // truncates; floor for negatives:
  i += (__builtin_convertvector(i, v8f) > fx);  // true is -1
  v8f n = __builtin_convertvector(i, v8f);
  x = x - n * 0.693359375f + n * 2.12194440e-4f;
  v8f y = splat8(1.9875691500e-4f);
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * x * x + x + 1.0f;
  return y * (v8f)((i + 127) << 23);  // 2^n in the exponent field
}

// The same for one float (tails of rows).
inline float exp1(float x) {
  v8f v = exp8(splat8(x));
  return v[0];
}

// x[i] = exp(x[i] - shift) for i < n; returns their sum (in a fixed order).
inline float exp_shift_sum(float* x, int n, float shift) {
  v8f acc = {};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    v8f e = exp8(load8(x + i) - shift);
    store8(x + i, e);
    acc += e;
  }
  float sum = hsum8(acc);
  for (; i < n; i++) {
    x[i] = exp1(x[i] - shift);
    sum += x[i];
  }
  return sum;
}

// max of x[0..n), n >= 1
inline float max_of(const float* x, int n) {
  int i = 0;
  float m = x[0];
  if (n >= 8) {
    v8f vm = load8(x);
    for (i = 8; i + 8 <= n; i += 8) vm = max8(vm, load8(x + i));
    m = hmax8(vm);
  }
  for (; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}

// s[i] = 1 / (1 + exp(-a[i])) for i < n
inline void sigmoid(float* s, const float* a, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) store8(s + i, 1.0f / (1.0f + exp8(-load8(a + i))));
  for (; i < n; i++) s[i] = 1.0f / (1.0f + exp1(-a[i]));
}

}  // namespace endure::model
