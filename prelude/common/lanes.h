// Which lane a shuffle reads: lane |id| of a simdgroup split into segments of |w| consecutive
// lanes (w a power of two: the simdgroup, a quad, a CUDA shuffle width or tile). A source
// outside the lane's segment gives |id| itself, so the lane keeps its own value (CUDA's rule and
// Metal's); rotations wrap around within the segment. Remainders by w are taken as masks: a
// division per lane would cost more than the rest of a shuffle.
#pragma once

namespace kjit::lanes {

// A segment width as given by a kernel (CUDA's shuffle width, Metal's shuffle-and-fill modulo):
// a power of two up to |whole|. Other values are undefined in both languages; here they mean
// the whole simdgroup or quad (a kernel cannot raise an error, and must not crash).
KJIT_INLINE unsigned segment_width(int width, unsigned whole) {
  return width >= 1 && unsigned(width) <= whole && (width & (width - 1)) == 0 ? unsigned(width)
                                                                              : whole;
}

KJIT_INLINE unsigned from_lane(unsigned id, unsigned src, unsigned w) {
  return (id & ~(w - 1)) + (src & (w - 1));
}
KJIT_INLINE unsigned from_below(unsigned id, unsigned d, unsigned w) {
  return (id & (w - 1)) >= d ? id - d : id;
}
KJIT_INLINE unsigned from_above(unsigned id, unsigned d, unsigned w) {
  return (id & (w - 1)) + d < w ? id + d : id;
}
KJIT_INLINE unsigned from_xor(unsigned id, unsigned mask, unsigned w) {
  const unsigned src = id ^ mask;
  return src < (id & ~(w - 1)) + w ? src : id;  // as CUDA: earlier segments can be read
}
// Metal's xor shuffles stay within the simdgroup or quad.
KJIT_INLINE unsigned from_xor_in_segment(unsigned id, unsigned mask, unsigned w) {
  const unsigned src = id ^ mask, base = id & ~(w - 1);
  return src >= base && src < base + w ? src : id;
}
KJIT_INLINE unsigned rotated_up(unsigned id, unsigned d, unsigned w) {
  return (id & ~(w - 1)) + (((id & (w - 1)) + w - (d & (w - 1))) & (w - 1));
}
KJIT_INLINE unsigned rotated_down(unsigned id, unsigned d, unsigned w) {
  return (id & ~(w - 1)) + (((id & (w - 1)) + d) & (w - 1));
}

// CUDA's shuffles read only the low five bits of their lane or offset argument (PTX's
// shfl.sync): an offset of 33 is one of 1, and -1 (as unsigned) one of 31.
template <unsigned (*Source)(unsigned, unsigned, unsigned)>
KJIT_INLINE unsigned by_low_five_bits(unsigned id, unsigned arg, unsigned w) {
  return Source(id, arg & 31u, w);
}

// Shuffle-and-fill: whether lane |id| reads data (true), or fill, |d| lanes up (below it) or
// down (above it) in its segment of |w| lanes, the read staying within the segment.
KJIT_INLINE bool reads_within(unsigned id, unsigned d, unsigned w, bool up) {
  const unsigned k = id & (w - 1);
  return up ? k >= d : k + d < w;
}

// A reduction of |n| lanes' values (n a power of two) in a butterfly's order: at each step, from
// n / 2 down to 1, lanes j and j ^ step both take op(the lower lane's value, the higher lane's).
// A lane absent leaves its partner's value as it is. Every slot ends with the result.
template <class T, class Op>
KJIT_INLINE void butterfly(T* values, bool* present, unsigned n, Op op) {
  for (unsigned step = n / 2; step > 0; step /= 2) {
    for (unsigned j = 0; j < n; ++j) {
      const unsigned high = j | step;
      if (j & step || !(present[j] || present[high])) continue;
      const T v = !present[high] ? values[j]
                  : !present[j]  ? values[high]
                                 : op(values[j], values[high]);
      values[j] = values[high] = v;
      present[j] = present[high] = true;
    }
  }
}

// The same reduction when all |N| lanes are present: halving the lanes at each step gives each
// slot of the lower half what the butterfly gives it, in loops the compiler vectorises.
template <unsigned N, class T, class Op>
KJIT_INLINE T halving(T* values, Op op) {
  for (unsigned step = N / 2; step > 0; step /= 2) {
    for (unsigned j = 0; j < step; ++j) values[j] = op(values[j], values[j + step]);
  }
  return values[0];
}

}  // namespace kjit::lanes
