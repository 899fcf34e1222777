#include "drain/search.hpp"

#include "core/cpu.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace spotshift::drain::search {

namespace {

size_t bits(uint32_t m) {
  m = m - ((m >> 1) & 0x55555555u);
  m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
  return static_cast<size_t>((((m + (m >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24);
}

// The generator's words two and four at a time, in GCC and clang vector extensions: SSE2 or AVX2
// instructions where the CPU has them, scalar ones elsewhere.
typedef uint64_t Words2 __attribute__((vector_size(16)));
typedef uint64_t Words4 __attribute__((vector_size(32)));

// Random::renew()'s step for the words [at, to), a `Words` at a time: each word becomes the one
// `ahead` of it xor MT19937-64's twist of its own upper bit and the next word's lower 31 bits.
// Returns where it stopped (short of `to` by less than the width).
template <class Words>
[[gnu::always_inline]] inline size_t twist(uint64_t* state, size_t at, size_t to, std::ptrdiff_t ahead) {
  constexpr size_t kWidth = sizeof(Words) / sizeof(uint64_t);
  constexpr uint64_t kUpper = ~uint64_t{0} << 31, kLower = ~kUpper, kMatrix = 0xB5026F5AA96619E9u;
  for (; at + kWidth <= to; at += kWidth) {
    Words here, next, from;
    std::memcpy(&here, state + at, sizeof here);
    std::memcpy(&next, state + at + 1, sizeof next);
    std::memcpy(&from, state + static_cast<std::ptrdiff_t>(at) + ahead, sizeof from);
    const Words y = (here & kUpper) | (next & kLower);
    here = from ^ (y >> 1) ^ (-(y & 1) & kMatrix);
    std::memcpy(state + at, &here, sizeof here);
  }
  return at;
}

#if defined(SPOTSHIFT_AVX2)
// Where the CPU runs AVX2 (the build does not assume it), the generator works four words at a
// time, with the same numbers.

__attribute__((target("avx2"))) size_t twist4(uint64_t* state, size_t at, size_t to, std::ptrdiff_t ahead) {
  return twist<Words4>(state, at, to, ahead);
}
#endif

// The first of the least of v[0, n), n at least 1 (no value is NaN).
size_t first_least(const float* v, size_t n) {
  float least = v[0];
  size_t i = 0;
#if defined(__SSE2__)
  if (n >= 8) {
    __m128 a = _mm_loadu_ps(v), b = _mm_loadu_ps(v + 4);
    for (i = 8; i + 8 <= n; i += 8) {
      a = _mm_min_ps(a, _mm_loadu_ps(v + i));
      b = _mm_min_ps(b, _mm_loadu_ps(v + i + 4));
    }
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, _mm_min_ps(a, b));
    least = std::min(std::min(lanes[0], lanes[1]), std::min(lanes[2], lanes[3]));
  }
#endif
  for (; i < n; ++i) least = std::min(least, v[i]);
  size_t at = 0;
#if defined(__SSE2__)
  const __m128 value = _mm_set1_ps(least);
  for (; at + 16 <= n; at += 16) {
    uint32_t m = 0;
    for (int k = 0; k < 4; ++k) m |= static_cast<uint32_t>(_mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(v + at + 4 * k), value))) << (4 * k);
    if (m) return at + static_cast<size_t>(std::countr_zero(m));
  }
#endif
  while (!(v[at] == least)) ++at;
  return at;
}

// A bit for each of v[0, 16) below x.
uint32_t below(const float* v, float x) {
  uint32_t m = 0;
#if defined(__SSE2__)
  const __m128 limit = _mm_set1_ps(x);
  for (int k = 0; k < 4; ++k) m |= static_cast<uint32_t>(_mm_movemask_ps(_mm_cmplt_ps(_mm_loadu_ps(v + 4 * k), limit))) << (4 * k);
#else
  for (int k = 0; k < 16; ++k) m |= static_cast<uint32_t>(v[k] < x) << k;
#endif
  return m;
}

// What the spot nodes have free of each resource, together.
std::array<double, kResources> free_totals(const Problem& p) {
  std::array<double, kResources> free{};
  for (const auto& f : p.free)
    for (size_t r = 0; r < kResources; ++r) free[r] += static_cast<double>(std::max<int64_t>(f[r], 0));
  return free;
}

// Each resource weighs what the pods ask of it against what the spot nodes have free.
std::array<double, kResources> weights_of(const Problem& p) {
  const std::array<double, kResources> free = free_totals(p);
  std::array<double, kResources> need{}, weight{};
  for (const auto& n : p.nodes)
    for (const auto& pod : n.pods)
      for (size_t r = 0; r < kResources; ++r) need[r] += static_cast<double>(pod.request[r]);
  for (size_t r = 0; r < kResources; ++r) weight[r] = free[r] > 0 ? need[r] / free[r] : 0;
  return weight;
}

class Search {
 public:
  Search(const Problem& problem, uint64_t seed)
      : p_(problem), rng_(seed), weight_(weights_of(problem)), spot_(problem.free, problem.allowed, weight_) {
    const std::array<double, kResources> free = free_totals(problem);
    key_.resize(p_.nodes.size());
    for (size_t i = 0; i < p_.nodes.size(); ++i)
      for (const auto& pod : p_.nodes[i].pods)
        for (size_t r = 0; r < kResources; ++r)
          if (free[r] > 0) key_[i] += weight_[r] * static_cast<double>(pod.request[r]) / free[r];
  }

  Solution run(Solution start, int iterations) {
    current_ = Solution{};
    current_.targets.resize(p_.nodes.size());
    for (size_t i = 0; i < start.targets.size() && i < p_.nodes.size(); ++i)
      if (!start.targets[i].empty()) {
        charge(i, start.targets[i], 1);
        settle(i, std::move(start.targets[i]));
      }
    Solution best = current_;
    std::vector<std::pair<size_t, std::vector<int>>> removed;
    std::vector<size_t> added;
    const int all = static_cast<int>(p_.nodes.size());
    for (int it = 0; it < iterations && best.drained < all; ++it) {
      removed.clear();
      added.clear();
      destroy(removed);
      repair(added);
      if (!better(best, current_)) {
        if (better(current_, best)) best = current_;
        continue;
      }
      // Worse than the best: undo the step.
      for (size_t i : added) take_back(i);
      for (auto& [i, targets] : removed) {
        charge(i, targets, 1);
        settle(i, std::move(targets));
      }
    }
    return best;
  }

 private:
  double uniform() { return unit(rng_); }
  size_t below(size_t n) { return static_cast<size_t>(uniform() * static_cast<double>(n)); }

  // Adds (sign 1) or takes back (-1) the load of the node's first targets.size() pods.
  void charge(size_t node, const std::vector<int>& targets, int sign) {
    const auto& pods = p_.nodes[node].pods;
    for (size_t k = 0; k < targets.size(); ++k) spot_.charge(static_cast<size_t>(targets[k]), pods[k].request, sign);
  }

  static bool better(const Solution& a, const Solution& b) {
    return a.drained > b.drained || (a.drained == b.drained && a.moved < b.moved);
  }

  // Records the node as drained onto `targets` (its load already charged).
  void settle(size_t node, std::vector<int> targets) {
    ++current_.drained;
    current_.moved += static_cast<int>(targets.size());
    current_.targets[node] = std::move(targets);
  }

  std::vector<int> take_back(size_t node) {
    std::vector<int> targets = std::move(current_.targets[node]);
    current_.targets[node].clear();
    charge(node, targets, -1);
    --current_.drained;
    current_.moved -= static_cast<int>(targets.size());
    return targets;
  }

  // Takes back 1 to 4 drained nodes at random, or every drained node with a pod on 1 to 4
  // random spot nodes (which frees those spot nodes for a different mix).
  void destroy(std::vector<std::pair<size_t, std::vector<int>>>& removed) {
    drained_.clear();
    for (size_t i = 0; i < current_.targets.size(); ++i)
      if (!current_.targets[i].empty()) drained_.push_back(i);
    const size_t count = 1 + below(4);
    if (uniform() < 0.5) {
      for (size_t k = 0; k < count && !drained_.empty(); ++k) {
        size_t at = below(drained_.size());
        size_t node = drained_[at];
        drained_.erase(drained_.begin() + static_cast<std::ptrdiff_t>(at));
        removed.emplace_back(node, take_back(node));
      }
      return;
    }
    // The spot nodes drawn, marked for a look-up per pod, and unmarked after.
    bins_.clear();
    chosen_.resize(p_.free.size());
    for (size_t k = 0; k < count; ++k) {
      bins_.push_back(below(p_.free.size()));
      chosen_[bins_.back()] = 1;
    }
    for (size_t node : drained_) {
      const auto& t = current_.targets[node];
      if (std::any_of(t.begin(), t.end(), [&](int b) { return chosen_[static_cast<size_t>(b)] != 0; }))
        removed.emplace_back(node, take_back(node));
    }
    for (size_t b : bins_) chosen_[b] = 0;
  }

  // Tries every node not drained, least weighted demand first with noise of +-15 %.
  void repair(std::vector<size_t>& added) {
    order_.clear();
    for (size_t i = 0; i < p_.nodes.size(); ++i)
      if (current_.targets[i].empty()) order_.emplace_back(key_[i] * (0.85 + 0.3 * uniform()), i);
    std::sort(order_.begin(), order_.end());
    for (const auto& [key, node] : order_)
      if (place(node)) added.push_back(node);
  }

  bool place(size_t node) {
    const auto& pods = p_.nodes[node].pods;
    if (pods.empty()) return false;
    std::vector<int> targets;
    targets.reserve(pods.size());
    for (const auto& pod : pods) {
      int bin = spot_.best(pod, rng_);
      if (bin < 0) {
        charge(node, targets, -1);
        return false;
      }
      spot_.charge(static_cast<size_t>(bin), pod.request, 1);
      targets.push_back(bin);
    }
    settle(node, std::move(targets));
    return true;
  }

  const Problem& p_;
  Random rng_;
  std::array<double, kResources> weight_;
  SpotBins spot_;
  std::vector<double> key_;
  Solution current_;
  std::vector<size_t> drained_;
  std::vector<size_t> bins_;
  std::vector<uint8_t> chosen_;  // per spot node: 1 while destroy() takes back its pods' nodes
  std::vector<std::pair<double, size_t>> order_;
};

}  // namespace

SpotBins::SpotBins(const std::vector<Amounts>& free, const std::vector<std::vector<uint8_t>>& allowed,
                   const std::array<double, kResources>& weights)
    : cap_(free), weight_(weights) {
  // No term of a score but the CPU term is above its resource's weight (nothing has more free
  // than its capacity, nor asks for more than is free): times 1 + the CPU term, far above what
  // rounding the sums can differ by.
  tolerance_ = 1e-9;
  for (double w : weight_) tolerance_ += 1e-9 * std::abs(w);
  const size_t bins = cap_.size(), blocks = (bins + kBlock - 1) / kBlock;
  for (size_t r = 0; r < kResources; ++r) {
    free_[r].resize(bins);
    // Past the last spot node, to the end of its block: room for nothing.
    rough_[r].assign(blocks * kBlock, -std::numeric_limits<float>::infinity());
    for (size_t b = 0; b < bins; ++b) {
      free_[r][b] = cap_[b][r];
      rough_[r][b] = static_cast<float>(free_[r][b]);
    }
  }
  room_.resize(blocks);
  loose_.resize(blocks);
  for (size_t k = 0; k < blocks; ++k) refresh(k);
  rows_.resize(bins);
  for (size_t b = 0; b < bins; ++b) {
    for (size_t r = 0; r < kResources; ++r)
      if (const int64_t cap = cap_[b][r]; cap > 0) rows_[b].inverse[r] = 1.0 / static_cast<double>(cap);
    set_row(b);
  }
  allowed_.resize(allowed.size());
  for (size_t a = 0; a < allowed.size(); ++a) {
    allowed_[a].assign(blocks, 0);
    for (size_t b = 0; b < bins && b < allowed[a].size(); ++b)
      if (allowed[a][b]) allowed_[a][b / kBlock] |= uint32_t{1} << (b % kBlock);
  }
  fitting_.resize(kLooks);
  slots_.assign(2 * kLooks, -1);
  changed_.resize(std::bit_ceil(kReplay * blocks));
  last_.resize(bins);
}

void SpotBins::charge(size_t bin, const Amounts& request, int sign) {
  last_[bin] = charges_;
  changed_[charges_++ & (changed_.size() - 1)] = static_cast<uint32_t>(bin);
  for (size_t r = 0; r < kResources; ++r) {
    free_[r][bin] -= sign * request[r];
    rough_[r][bin] = static_cast<float>(free_[r][bin]);
    // Less free leaves the block's room an upper bound, which refresh() tightens when a look
    // at the block finds nothing; more free may raise it.
    room_[bin / kBlock][r] = std::max(room_[bin / kBlock][r], free_[r][bin]);
  }
  if (sign > 0) loose_[bin / kBlock] = 1;
  set_row(bin);
}

// The parts of a spot node's row that change with what it has free.
void SpotBins::set_row(size_t bin) {
  constexpr size_t kScarce = kResources - 1;
  Row& row = rows_[bin];
  row.share = share(bin);
  row.per_cpu = free_[kScarce][bin] > 0 ? 1.0 / static_cast<double>(std::max<int64_t>(1, free_[0][bin])) : 0;
}

// The free share of a spot node: its score before the pod's own requests.
double SpotBins::share(size_t bin) const {
  double sum = 0;
  for (size_t r = 0; r < kResources; ++r)
    if (const int64_t cap = cap_[bin][r]; cap > 0) sum += weight_[r] * static_cast<double>(free_[r][bin]) / static_cast<double>(cap);
  return sum;
}

// Sets a block's room to the most of each resource free on one of its spot nodes.
void SpotBins::refresh(size_t block) {
  loose_[block] = 0;
  Amounts& most = room_[block];
  most.fill(std::numeric_limits<int64_t>::min());
  const size_t end = std::min(cap_.size(), (block + 1) * kBlock);
  for (size_t b = block * kBlock; b < end; ++b)
    for (size_t r = 0; r < kResources; ++r) most[r] = std::max(most[r], free_[r][b]);
}

// The bound on a pod's score on a spot node before its noise n is (lower + extra) * n - tolerance
// * (1 + extra): lower, the node's free share less what the pod asks of each resource over the
// node's capacity; extra, the CPU term with a multiplication for the division (0 where none of
// the scarce resource is free). The first term is lower + extra, the second tolerance * (1 +
// extra).
std::array<double, 2> SpotBins::terms(const Ask& ask, size_t bin) const {
  const Row& row = rows_[bin];
  double lower = row.share;
  for (size_t r = 0; r < kResources; ++r) lower -= ask.weighted[r] * row.inverse[r];
  const double extra = ask.cpu_term * row.per_cpu;
  return {lower + extra, tolerance_ * (1 + extra)};
}

// A score's noise factor from the state word of its draw, and its range: kLeastNoise + kSpread *
// unit() rounds to neither less than the first nor more than the second (rounding is monotonic
// and unit() is below 1).
constexpr double kLeastNoise = 0.95, kSpread = 0.1, kMostNoise = kLeastNoise + kSpread;
static double noise_of(uint64_t word) { return kLeastNoise + kSpread * unit_of_word(word); }

// A look's terms of the bound on a pod's score on a spot node, and the least that bound is
// whatever the noise: the first term times the noise that makes it least, less the second
// (rounding is monotonic, so no noise gives a bound below it).
void SpotBins::set_terms(Fitting& look, const Ask& ask, size_t bin) const {
  const std::array<double, 2> t = terms(ask, bin);
  look.terms[bin] = t;
  look.least[bin] = (t[0] >= 0 ? t[0] * kLeastNoise : t[0] * kMostNoise) - t[1];
}

// The spot nodes the pod fits, with their terms. A look for a pod of the same requests and
// allowed set is remembered and, when at most kReplay charges a block behind, brought up to
// date with the nodes charged since, each checked again; otherwise a block at a time, a bit
// each, and a block whose room is short of a resource the pod asks for is passed over whole.
SpotBins::Fitting& SpotBins::fitting(const Pod& pod, const Ask& ask) {
  const Amounts& need = ask.need;
  const std::vector<uint32_t>* allowed = pod.allowed >= 0 ? &allowed_[static_cast<size_t>(pod.allowed)] : nullptr;
  auto fits_exactly = [&](size_t b) {
    bool f = !allowed || ((*allowed)[b / kBlock] >> (b % kBlock) & 1u) != 0;
    for (size_t r = 0; r < kResources; ++r) f = f && free_[r][b] >= need[r];
    return f;
  };
  uint64_t h = static_cast<uint64_t>(pod.allowed) * 0x9E3779B97F4A7C15u;
  for (int64_t x : pod.request) h = (h ^ static_cast<uint64_t>(x)) * 0xBF58476D1CE4E5B9u;
  const size_t wrap = slots_.size() - 1;
  size_t slot = h >> 32 & wrap;
  for (; slots_[slot] >= 0; slot = (slot + 1) & wrap) {
    const Fitting& look = fitting_[static_cast<size_t>(slots_[slot])];
    if (look.request == pod.request && look.allowed == pod.allowed) break;
  }
  if (slots_[slot] < 0) {
    // A shape not seen before: a look of its own, or when all are taken, all are forgotten.
    if (looks_ == fitting_.size()) {
      slots_.assign(slots_.size(), -1);
      looks_ = 0;
      slot = h >> 32 & wrap;
    }
    Fitting& look = fitting_[looks_];
    look.request = pod.request;
    look.allowed = pod.allowed;
    look.seen = 0;
    look.mask.clear();
    slots_[slot] = static_cast<int32_t>(looks_++);
  }
  Fitting& look = fitting_[static_cast<size_t>(slots_[slot])];
  const size_t blocks = room_.size();
  if (!look.mask.empty() && charges_ - look.seen <= kReplay * blocks) {
    ++replayed_;
    for (uint64_t k = look.seen; k < charges_; ++k) {
      const size_t b = changed_[k & (changed_.size() - 1)];
      if (last_[b] != k) continue;  // charged again since: checked then
      const uint32_t bit = uint32_t{1} << (b % kBlock);
      uint32_t& word = look.mask[b / kBlock];
      const bool was = (word & bit) != 0, is = fits_exactly(b);
      word = is ? word | bit : word & ~bit;
      look.fits = look.fits + is - was;
      if (is) set_terms(look, ask, b);
      if (!look.listed || !(is || was)) continue;
      // The node's place in the list, which it takes or leaves, moving the nodes after it.
      const size_t block = b / kBlock, rank = look.ahead[block] + bits(word & (bit - 1));
      if (is && was) {
        look.ranked[rank] = float_below(look.least[b]);
        continue;
      }
      if (is) {
        look.nodes.insert(look.nodes.begin() + static_cast<std::ptrdiff_t>(rank), static_cast<uint32_t>(b));
        look.ranked.insert(look.ranked.begin() + static_cast<std::ptrdiff_t>(rank), float_below(look.least[b]));
      } else {
        look.nodes.erase(look.nodes.begin() + static_cast<std::ptrdiff_t>(rank));
        look.ranked.erase(look.ranked.begin() + static_cast<std::ptrdiff_t>(rank));
      }
      const uint32_t step = is ? 1 : ~uint32_t{0};
      for (size_t j = block + 1; j < blocks; ++j) look.ahead[j] += step;
    }
    look.seen = charges_;
    return look;
  }
  look.seen = charges_;
  look.mask.resize(blocks);
  look.terms.resize(cap_.size());
  look.least.resize(cap_.size());
  look.listed = false;
  // A float compares as the integer does where what the pod asks is exact in a float (below
  // 2^24, or the least value, -2^63): rounding is monotonic. The others are checked exactly.
  std::array<float, kResources> rough;
  std::array<size_t, kResources> inexact;
  size_t inexacts = 0;
  for (size_t r = 0; r < kResources; ++r) {
    rough[r] = static_cast<float>(need[r]);
    constexpr int64_t kExact = int64_t{1} << 24;
    if (need[r] != std::numeric_limits<int64_t>::min() && (need[r] <= -kExact || need[r] >= kExact)) inexact[inexacts++] = r;
  }
  size_t fits = 0;
  for (size_t k = 0; k < blocks; ++k) {
    uint32_t m = 0;
    bool short_everywhere = false;
    for (size_t r = 0; r < kResources; ++r) short_everywhere = short_everywhere || room_[k][r] < need[r];
    if (!short_everywhere) {
      m = roughly_fits(rough, k * kBlock);
      if (!m && loose_[k]) refresh(k);  // a room above what is free cost a look: the next pod may skip it
      if (allowed) m &= (*allowed)[k];
      // Rounding to float may pass a node a little short: check those found exactly.
      if (inexacts)
        for (uint32_t left = m; left; left &= left - 1) {
          const size_t b = k * kBlock + static_cast<size_t>(std::countr_zero(left));
          bool f = true;
          for (size_t i = 0; i < inexacts; ++i) f = f && free_[inexact[i]][b] >= need[inexact[i]];
          if (!f) m &= ~(left & (~left + 1));
        }
    }
    look.mask[k] = m;
    fits += bits(m);
    for (; m; m &= m - 1) set_terms(look, ask, k * kBlock + static_cast<size_t>(std::countr_zero(m)));
  }
  look.fits = fits;
  return look;
}

int SpotBins::best(const Pod& pod, Random& rng) {
  // 1. The spot nodes the pod fits, and the terms of the bound on its score on each.
  constexpr size_t kScarce = kResources - 1;
  Ask ask;
  for (size_t r = 0; r < kResources; ++r) {
    ask.need[r] = pod.request[r] == 0 ? std::numeric_limits<int64_t>::min() : pod.request[r];
    ask.weighted[r] = weight_[r] * static_cast<double>(pod.request[r]);
  }
  ask.cpu_term = pod.request[kScarce] == 0 ? weight_[kScarce] * static_cast<double>(pod.request[0]) : 0;
  Fitting& look = fitting(pod, ask);
  const size_t fits = look.fits;
  if (fits == 0) return -1;
  if (!look.listed) {
    look.nodes.resize(fits);
    look.ranked.resize(fits);
    look.ahead.resize(look.mask.size());
    uint32_t* const nodes = look.nodes.data();
    float* const ranked = look.ranked.data();
    size_t rank = 0;
    for (size_t k = 0; k < look.mask.size(); ++k) {
      look.ahead[k] = static_cast<uint32_t>(rank);
      for (uint32_t m = look.mask[k]; m; m &= m - 1) {
        const auto b = static_cast<uint32_t>(k * kBlock + static_cast<size_t>(std::countr_zero(m)));
        nodes[rank] = b;
        ranked[rank++] = float_below(look.least[b]);
      }
    }
    look.listed = true;
  }
  // 2. A node of the least bound whatever the noise (as a float at most that bound), scored with
  //    its noise: no node whose least bound is not below that score scores as low, and such a
  //    node needs no more than its place among the draws.
  const uint32_t* const bins = look.nodes.data();
  const float* const ranked = look.ranked.data();
  const double* const least = look.least.data();
  const uint64_t* const words = rng.words(fits, spill_);
  const size_t first = first_least(ranked, fits);
  auto best = static_cast<int>(bins[first]);
  double best_score = score(pod, bins[first]) * noise_of(words[first]);
  float limit = float_above(best_score);
  // 3. Every other node whose least bound is below the best score so far, in node order (its
  //    float below a float at least that score): its noise and the bound with it, and where that
  //    is below too, its score. The best score only falls on the way, so no node passed over
  //    scores as low as the last.
  const std::array<double, 2>* const terms = look.terms.data();
  auto look_at = [&](size_t i) {
    if (!(least[bins[i]] < best_score) || i == first) return;
    const double noise = noise_of(words[i]);
    const std::array<double, 2>& t = terms[bins[i]];
    if (!(t[0] * noise - t[1] < best_score)) return;
    const auto b = static_cast<int>(bins[i]);
    const double score = this->score(pod, bins[i]) * noise;
    if (score < best_score || (score == best_score && b < best)) {
      best = b;
      best_score = score;
      limit = float_above(best_score);
    }
  };
  size_t i = 0;
  for (; i + 16 <= fits; i += 16)
    for (uint32_t m = below(ranked + i, limit); m; m &= m - 1) look_at(i + static_cast<size_t>(std::countr_zero(m)));
  for (; i < fits; ++i) look_at(i);
  return best;
}

// A bit for each of the block's spot nodes with at least `need` of every resource free, as
// floats: rounding is monotonic, so no node that fits is left out, and one a little short may
// be let in.
uint32_t SpotBins::roughly_fits(const std::array<float, kResources>& need, size_t lo) const {
  uint32_t m = 0;
#if defined(__SSE2__)
  for (size_t j = 0; j < kBlock; j += 4) {
    __m128 ok = _mm_cmpge_ps(_mm_loadu_ps(&rough_[0][lo + j]), _mm_set1_ps(need[0]));
    for (size_t r = 1; r < kResources; ++r) ok = _mm_and_ps(ok, _mm_cmpge_ps(_mm_loadu_ps(&rough_[r][lo + j]), _mm_set1_ps(need[r])));
    m |= static_cast<uint32_t>(_mm_movemask_ps(ok)) << j;
  }
#else
  for (size_t j = 0; j < kBlock; ++j) {
    bool f = true;
    for (size_t r = 0; r < kResources; ++r) f = f && rough_[r][lo + j] >= need[r];
    m |= static_cast<uint32_t>(f) << j;
  }
#endif
  return m;
}

double SpotBins::score(const Pod& pod, size_t b) const {
  double score = 0;
  for (size_t r = 0; r < kResources; ++r)
    if (const int64_t cap = cap_[b][r]; cap > 0)
      score += weight_[r] * static_cast<double>(free_[r][b] - pod.request[r]) / static_cast<double>(cap);
  constexpr size_t kScarce = kResources - 1;
  if (pod.request[kScarce] == 0 && free_[kScarce][b] > 0)
    score += weight_[kScarce] * static_cast<double>(pod.request[0]) / static_cast<double>(std::max<int64_t>(1, free_[0][b]));
  return score;
}

const uint64_t* Random::words(std::size_t n, std::vector<uint64_t>& spill) {
  if (next_ + n <= kWords) {
    const uint64_t* const at = &state_[next_];
    next_ += n;
    return at;
  }
  spill.resize(n);
  for (std::size_t at = 0; at < n;) {
    if (next_ == kWords) renew();
    const std::size_t take = std::min(n - at, kWords - next_);
    std::memcpy(&spill[at], &state_[next_], take * sizeof(uint64_t));
    next_ += take;
    at += take;
  }
  return spill.data();
}

Random::Random(uint64_t seed) {
  state_[0] = seed;
  for (std::size_t i = 1; i < kWords; ++i) state_[i] = 6364136223846793005u * (state_[i - 1] ^ (state_[i - 1] >> 62)) + i;
}

// Each word becomes the one kMiddle ahead of it, around the state, xor the twist of its own and
// the next word's bits. Words before kWords - kMiddle read words ahead as they were, the others
// words renewed at least kMiddle behind, so a vector of words at a time comes out the same as one
// at a time. The last word's next word is the first, renewed: its copy after the last.
void Random::renew() {
  constexpr auto kMiddle = std::ptrdiff_t{156}, kAround = kMiddle - static_cast<std::ptrdiff_t>(kWords);
  std::size_t i = 0;
  auto steps = [&](std::size_t to, std::ptrdiff_t ahead) {
#if defined(SPOTSHIFT_AVX2)
    if (has_avx2()) i = twist4(state_.data(), i, to, ahead);
#endif
    i = twist<Words2>(state_.data(), i, to, ahead);
    i = twist<uint64_t>(state_.data(), i, to, ahead);
  };
  steps(kWords - static_cast<std::size_t>(kMiddle), kMiddle);
  steps(kWords - 1, kAround);
  state_[kWords] = state_[0];
  steps(kWords, kAround);
  next_ = 0;
}

float float_below(double x) {
  const float f = static_cast<float>(x);
  if (!(static_cast<double>(f) > x)) return f;
  // One step down: toward zero from a positive float, away from it from a negative one.
  return f == 0 ? -std::numeric_limits<float>::denorm_min() : std::bit_cast<float>(std::bit_cast<uint32_t>(f) + (f > 0 ? -1u : 1u));
}

bool feasible(const Problem& problem, const Solution& solution) {
  if (solution.targets.size() > problem.nodes.size()) return false;
  std::vector<Amounts> load(problem.free.size(), Amounts{});
  int drained = 0, moved = 0;
  for (size_t i = 0; i < solution.targets.size(); ++i) {
    const auto& t = solution.targets[i];
    if (t.empty()) continue;
    const auto& pods = problem.nodes[i].pods;
    if (t.size() != pods.size()) return false;
    ++drained;
    moved += static_cast<int>(pods.size());
    for (size_t k = 0; k < pods.size(); ++k) {
      if (t[k] < 0 || static_cast<size_t>(t[k]) >= problem.free.size()) return false;
      const auto b = static_cast<size_t>(t[k]);
      if (pods[k].allowed >= 0 && !problem.allowed[static_cast<size_t>(pods[k].allowed)][b]) return false;
      for (size_t r = 0; r < kResources; ++r) load[b][r] += pods[k].request[r];
    }
  }
  for (size_t b = 0; b < load.size(); ++b)
    for (size_t r = 0; r < kResources; ++r)
      if (load[b][r] > 0 && load[b][r] > problem.free[b][r]) return false;
  return drained == solution.drained && moved == solution.moved;
}

Solution improve(const Problem& problem, Solution start, int iterations, uint64_t seed) {
  if (problem.nodes.empty() || problem.free.empty() || iterations <= 0) return start;
  return Search(problem, seed).run(std::move(start), iterations);
}

}  // namespace spotshift::drain::search
