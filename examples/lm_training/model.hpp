#pragma once
// The decoder-only transformer: byte tokens, learned positional embeddings, pre-norm blocks
//   h = x + Attn(RMSNorm(x));  x' = h + W2 GELU(W1 RMSNorm(h))
// a final RMSNorm and an untied LM head (a Linear, so it is an 8-bit GEMM too). GPT-2 style
// init: N(0, 0.02), the two residual projections N(0, 0.02 / sqrt(2 L)).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attention.hpp"
#include "data.hpp"
#include "layers.hpp"

namespace lm {

struct model_config {
  std::size_t layers = 4, d_model = 128, heads = 4, d_ff = 512, context = 128;
  [[nodiscard]] std::string describe() const {
    return std::to_string(layers) + " layers, d_model " + std::to_string(d_model) + ", " + std::to_string(heads) +
           " heads, d_ff " + std::to_string(d_ff) + ", context " + std::to_string(context) + ", vocab 256 (bytes)";
  }
};

template <class T>
struct block {
  rms_norm<T> norm1, norm2;
  self_attention<T> attn;
  linear<T> fc1, fc2;
  gelu<T> act;
  // activations kept for the backward
  tensor<T> x_in, n1, a_out, h, n2, u, g, f_out;
  // backward scratch
  tensor<T> d_h, d_n2, d_g, d_u, d_n1, d_tmp;

  block() = default;
  block(std::size_t i, const model_config& c, rng& r, const recipe& rc, unsigned threads) {
    const std::string n = "block" + std::to_string(i);
    const double std0 = 0.02, std_res = 0.02 / std::sqrt(2.0 * static_cast<double>(c.layers));
    norm1 = rms_norm<T>(n + ".norm1", c.d_model);
    norm2 = rms_norm<T>(n + ".norm2", c.d_model);
    attn = self_attention<T>(n + ".attn", c.d_model, c.heads, std0, std_res, r, rc, threads);
    fc1 = linear<T>(n + ".fc1", c.d_model, c.d_ff, std0, r, rc, threads);
    fc2 = linear<T>(n + ".fc2", c.d_ff, c.d_model, std_res, r, rc, threads);
  }
};

/// Where the trainer injects a fault this step (nothing by default).
struct fault {
  bool nan_activation = false;  ///< a NaN in the GELU output of block 0 (the input of fc2)
  bool inf_gradient = false;    ///< an Inf in dY of the last block's fc1 (its output gradient)
};

template <class T>
struct transformer {
  model_config cfg;
  unsigned threads = 1;
  embedding<T> emb;
  std::vector<block<T>> blocks;
  rms_norm<T> norm_f;
  linear<T> head;
  // forward state
  std::size_t b = 0, t = 0;
  std::vector<std::uint8_t> ids;
  tensor<T> x0, xf, nf, logits, dlogits, d_nf, d_x, d_tmp;

  transformer(const model_config& c, const recipe& rc, std::uint64_t seed, unsigned thread_count)
      : cfg(c), threads(thread_count) {
    rng r(seed);
    emb = embedding<T>(vocab_size, c.context, c.d_model, 0.02, r);
    for (std::size_t i = 0; i < c.layers; ++i) blocks.emplace_back(i, c, r, rc, thread_count);
    norm_f = rms_norm<T>("norm_f", c.d_model);
    head = linear<T>("head", c.d_model, vocab_size, 0.02, r, rc, thread_count);
  }

  /// Mean cross-entropy of the batch; keeps what backward() needs.
  double forward(const batch& bt, const fault& f = {}, bool keep_grad = true) {
    b = bt.b, t = bt.t, ids = bt.inputs;
    emb.forward(bt.inputs, t, x0);
    const tensor<T>* x = &x0;
    for (block<T>& bl : blocks) {
      bl.x_in = *x;
      bl.norm1.forward(bl.x_in, bl.n1);
      bl.attn.forward(bl.n1, b, t, bl.a_out, threads);
      bl.h = bl.x_in;
      for (std::size_t i = 0; i < bl.h.size(); ++i) bl.h.v[i] += bl.a_out.v[i];
      bl.norm2.forward(bl.h, bl.n2);
      bl.fc1.forward(bl.n2, bl.u, threads);
      bl.act.forward(bl.u, bl.g, threads);
      if (f.nan_activation && &bl == &blocks.front()) bl.g.v[0] = std::numeric_limits<T>::quiet_NaN();
      bl.fc2.forward(bl.g, bl.f_out, threads);
      for (std::size_t i = 0; i < bl.h.size(); ++i) bl.f_out.v[i] += bl.h.v[i];
      x = &bl.f_out;
    }
    xf = *x;
    norm_f.forward(xf, nf);
    head.forward(nf, logits, threads);
    return cross_entropy(logits, bt.targets, keep_grad ? &dlogits : nullptr);
  }

  /// Gradients of the last forward() (zeroed first).
  void backward(const fault& f = {}) {
    zero_grad();
    head.backward(dlogits, &d_nf, threads);
    norm_f.backward(xf, d_nf, d_x);
    for (std::size_t li = blocks.size(); li-- > 0;) {
      block<T>& bl = blocks[li];
      // x' = h + fc2(gelu(fc1(norm2(h))))
      bl.fc2.backward(d_x, &bl.d_g, threads);
      bl.act.backward(bl.u, bl.d_g, bl.d_u, threads);
      if (f.inf_gradient && li + 1 == blocks.size()) bl.d_u.v[0] = std::numeric_limits<T>::infinity();
      bl.fc1.backward(bl.d_u, &bl.d_n2, threads);
      bl.norm2.backward(bl.h, bl.d_n2, bl.d_tmp);
      bl.d_h = d_x;
      for (std::size_t i = 0; i < bl.d_h.size(); ++i) bl.d_h.v[i] += bl.d_tmp.v[i];
      // h = x + attn(norm1(x))
      bl.attn.backward(bl.d_h, bl.d_n1, threads);
      bl.norm1.backward(bl.x_in, bl.d_n1, d_x);
      for (std::size_t i = 0; i < d_x.size(); ++i) d_x.v[i] += bl.d_h.v[i];
    }
    emb.backward(ids, t, d_x);
  }

  std::vector<parameter<T>> parameters() {
    std::vector<parameter<T>> p;
    p.push_back({"emb.tok", &emb.tok, &emb.gtok, false});
    p.push_back({"emb.pos", &emb.pos, &emb.gpos, false});
    for (block<T>& bl : blocks) {
      p.push_back({bl.norm1.name, &bl.norm1.g, &bl.norm1.gg, false});
      p.push_back({bl.attn.qkv.name, &bl.attn.qkv.w, &bl.attn.qkv.gw, true});
      p.push_back({bl.attn.proj.name, &bl.attn.proj.w, &bl.attn.proj.gw, true});
      p.push_back({bl.norm2.name, &bl.norm2.g, &bl.norm2.gg, false});
      p.push_back({bl.fc1.name, &bl.fc1.w, &bl.fc1.gw, true});
      p.push_back({bl.fc2.name, &bl.fc2.w, &bl.fc2.gw, true});
    }
    p.push_back({norm_f.name, &norm_f.g, &norm_f.gg, false});
    p.push_back({head.name, &head.w, &head.gw, true});
    return p;
  }

  [[nodiscard]] std::size_t parameter_count() {
    std::size_t n = 0;
    for (const auto& p : parameters()) n += p.value->size();
    return n;
  }

  void zero_grad() {
    for (auto& p : parameters())
      for (T& x : p.grad->v) x = T(0);
  }

  /// Every quant_slot of the model (f(slot)).
  template <class F>
  void for_each_slot(F&& f) {
    for (block<T>& bl : blocks) {
      bl.attn.for_each_slot(f);
      bl.fc1.for_each_slot(f);
      bl.fc2.for_each_slot(f);
    }
    head.for_each_slot(f);
  }
};

}  // namespace lm
