#include "sched/plugins.hpp"

#include <algorithm>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace spotshift::sched {

bool matches_node_affinity(const model::Pod& pod, const model::Node& node) { return pod.selects_node(node.meta.labels, node.name()); }

const model::Taint* untolerated_taint(const model::Pod& pod, const model::Node& node) {
  return model::first_untolerated(pod.tolerations, node.taints, true, false, true);
}

NamespaceScope term_scope(const model::PodAffinityTerm& term, const model::InternedString& owner_ns, const model::InternedString& ns) {
  for (const auto& n : term.namespaces)
    if (n == ns) return NamespaceScope::kIn;
  if (term.namespace_selector) {
    if (term.namespace_selector->empty()) return NamespaceScope::kIn;
    return NamespaceScope::kUnknown;
  }
  if (term.namespaces.empty()) return ns == owner_ns ? NamespaceScope::kIn : NamespaceScope::kOut;
  return NamespaceScope::kOut;
}

void for_each_matching(const Fork& fork, const model::LabelSelector& selector, const std::function<void(const model::Pod&, int node)>& f) {
  const ClusterSnapshot& snap = fork.base();
  // The smallest candidate set a positive requirement allows.
  const std::vector<PlacedPod>* best = nullptr;
  std::vector<PlacedPod> merged;
  size_t best_size = SIZE_MAX;
  for (const auto& r : selector.requirements()) {
    if (r.op == model::SelectorOp::kEquals || r.op == model::SelectorOp::kIn) {
      if (r.values.size() == 1) {
        const auto& b = snap.pods_with_label_value(r.key, r.values[0]);
        if (b.size() < best_size) {
          best = &b;
          best_size = b.size();
        }
      } else {
        size_t total = 0;
        for (const auto& v : r.values) total += snap.pods_with_label_value(r.key, v).size();
        if (total < best_size) {
          merged.clear();
          for (const auto& v : r.values) {
            const auto& b = snap.pods_with_label_value(r.key, v);
            merged.insert(merged.end(), b.begin(), b.end());
          }
          best = &merged;
          best_size = total;
        }
      }
    } else if (r.op == model::SelectorOp::kExists) {
      const auto& b = snap.pods_with_label(r.key);
      if (b.size() < best_size) {
        best = &b;
        best_size = b.size();
      }
    }
  }
  if (!best) best = &snap.all_pods();
  for (const auto& placed : *best) {
    if (fork.touched(placed.node) && fork.is_removed(placed.node, placed.pod)) continue;
    if (selector.matches(placed.pod->meta.labels)) f(*placed.pod, placed.node);
  }
  // Added pods: those carrying the selector's first single-value label, when it has one.
  const model::Requirement* anchor = single_value_requirement(selector);
  auto check = [&](const model::Pod& p, int node) {
    if (selector.matches(p.meta.labels)) f(p, node);
  };
  if (anchor) fork.for_each_added_with_label(anchor->key, anchor->values[0], check);
  else fork.for_each_added(check);
}

namespace {

// One raw score, as a double, scaled to 0..100 between the least and the most.
double scaled(double v, double min, double max, bool lower_better) {
  return max == min ? 100.0 : 100.0 * (lower_better ? max - v : v - min) / (max - min);
}

#if defined(__SSE2__)
// scale() two values at a time, for scores below 2^51 in size (every one a plan computes): each
// converted to a double exactly by adding it to 2^52 + 2^51 in the bits of a double, then the
// same operations in the same order as one at a time, so the same results. False, with `out`
// unspecified, when a score is larger.
bool scale_pairs(const std::vector<int64_t>& raw, std::vector<double>& out, bool lower_better) {
  const size_t count = raw.size();
  const int64_t* in = raw.data();
  double* to = out.data();
  const __m128i bias = _mm_set1_epi64x(int64_t(1) << 51), magic_bits = _mm_set1_epi64x(0x4338000000000000LL);
  const __m128d magic = _mm_set1_pd(6755399441055744.0);  // 2^52 + 2^51
  __m128i outside = _mm_setzero_si128();
  __m128d lo = _mm_set1_pd(std::numeric_limits<double>::infinity()), hi = _mm_set1_pd(-std::numeric_limits<double>::infinity());
  size_t k = 0;
  for (; k + 2 <= count; k += 2) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + k));
    outside = _mm_or_si128(outside, _mm_srli_epi64(_mm_add_epi64(v, bias), 52));  // not in [-2^51, 2^51)
    const __m128d d = _mm_sub_pd(_mm_castsi128_pd(_mm_add_epi64(v, magic_bits)), magic);
    lo = _mm_min_pd(lo, d);
    hi = _mm_max_pd(hi, d);
    _mm_storeu_pd(to + k, d);
  }
  alignas(16) uint64_t flags[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(flags), outside);
  if ((flags[0] | flags[1]) != 0) return false;
  alignas(16) double lows[2], highs[2];
  _mm_store_pd(lows, lo);
  _mm_store_pd(highs, hi);
  double min = std::min(lows[0], lows[1]), max = std::max(highs[0], highs[1]);
  if (k < count) {
    const auto v = static_cast<double>(in[k]);
    min = std::min(min, v);
    max = std::max(max, v);
    to[k] = v;
  }
  if (max == min) {
    std::fill(to, to + count, 100.0);
    return true;
  }
  // 100 * (max - v) / (max - min), or 100 * (v - min) / (max - min).
  const __m128d hundred = _mm_set1_pd(100.0), range = _mm_set1_pd(max - min), from = _mm_set1_pd(lower_better ? max : min);
  for (k = 0; k + 2 <= count; k += 2) {
    const __m128d v = _mm_loadu_pd(to + k);
    const __m128d apart = lower_better ? _mm_sub_pd(from, v) : _mm_sub_pd(v, from);
    _mm_storeu_pd(to + k, _mm_div_pd(_mm_mul_pd(hundred, apart), range));
  }
  if (k < count) to[k] = scaled(to[k], min, max, lower_better);
  return true;
}
#endif

void scale(const std::vector<int64_t>& raw, std::vector<double>& out, bool lower_better) {
  if (raw.empty()) return;
#if defined(__SSE2__)
  if (scale_pairs(raw, out, lower_better)) return;
#endif
  auto [lo, hi] = std::minmax_element(raw.begin(), raw.end());
  const auto min = static_cast<double>(*lo), max = static_cast<double>(*hi);
  for (size_t k = 0; k < raw.size(); ++k) out[k] = scaled(static_cast<double>(raw[k]), min, max, lower_better);
}

}  // namespace

void scale_lower_better(const std::vector<int64_t>& raw, std::vector<double>& out) { scale(raw, out, true); }
void scale_higher_better(const std::vector<int64_t>& raw, std::vector<double>& out) { scale(raw, out, false); }

}  // namespace spotshift::sched
