/* hoibench.formats._colscan: one pass from a JSON (or Python-literal) text straight into columns.
 *
 * Why: the prediction files HOI detectors write hold up to 10^8 numbers (a QPIC dump keeps a
 * score per verb for every pair). A document parser builds a tape or an object per number and
 * then copies them out; this scanner reads the text once, guided by a schema that names the
 * fields wanted, and appends every number of a field to one float64 column. Anything it does
 * not prove (an escaped key, a duplicate key, a boolean where a number belongs, a nested row,
 * a number it cannot convert exactly, bad UTF-8) makes it refuse: the caller then reads the
 * file with its careful reader, which accepts it or names the record and field. It never
 * guesses.
 *
 * Numbers are converted exactly (correctly rounded, as Python's float()): integers, Clinger's
 * fast path (a significand below 2^53 and a power of ten up to 10^22), a 128-bit exact division
 * for 17-19 digit significands with up to 27 decimals, and strtod (glibc: correctly rounded)
 * for the rest.
 *
 * Schema (built by hoibench.formats._scan): a field is (key: bytes, kind: int, sub: schema or
 * None); a schema is (strict: bool, fields: tuple). Kinds: 1 string, 2 number, 3 list of numbers,
 * 4 list of lists of numbers, 5 list of objects (sub), 6 object (sub), 7 list of strings, 8 list
 * of lists of lists of numbers. A field of kind 3, 4 or 8 may take `null` for a number (read as
 * NaN; nulls = 1) and, with null_width > 0, for an innermost list (null_width NaNs); with f32
 * its numbers are stored as float32 (the double rounded to nearest, as numpy's astype). The root is a kind-5 or
 * kind-6 field whose key is ignored. Counters are kept per "slot": slot 0 for everything
 * outside the outermost list of objects, slot 1 + i for its element i (everything below it).
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE /* memmem */
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <ctype.h>
#include <stddef.h>

enum { K_STR = 1, K_NUM = 2, K_NUMS1 = 3, K_NUMS2 = 4, K_RECORDS = 5, K_OBJECT = 6, K_STRS = 7, K_NUMS3 = 8 };
#define MAX_DEPTH 200
#define MAX_UNKNOWN 64

/* A growing byte buffer. On Linux, one of 1 MiB or more is a private mapping of its own, grown
 * by mremap (the pages move, nothing is copied) and joinable to another without a copy (see
 * buf_append); a smaller one is malloc'ed. */
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#define MAPPED_FROM ((size_t)1 << 20)
#endif

typedef struct {
    char *data;
    size_t len, cap; /* bytes */
    int mapped;      /* data is a mapping of cap bytes (else malloc'ed) */
} Buf;

static void mem_free(char *data, size_t cap, int mapped) {
#if defined(__linux__)
    if (mapped) {
        munmap(data, cap);
        return;
    }
#endif
    (void)cap, (void)mapped;
    free(data);
}

static void buf_free(Buf *b) {
    mem_free(b->data, b->cap, b->mapped);
    memset(b, 0, sizeof(Buf));
}

#if defined(__linux__)
/* The buffer moved to (or grown as) a mapping of `cap` bytes, a multiple of the page size. */
static int buf_map(Buf *b, size_t cap) {
    char *d;
    if (b->mapped) {
        d = mremap(b->data, b->cap, cap, MREMAP_MAYMOVE);
    } else {
        d = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (d != MAP_FAILED && b->len) memcpy(d, b->data, b->len);
        if (d != MAP_FAILED) free(b->data);
    }
    if (d == MAP_FAILED) return -1;
    b->data = d;
    b->cap = cap;
    b->mapped = 1;
    return 0;
}
#endif

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + extra) cap *= 2;
#if defined(__linux__)
    if (cap >= MAPPED_FROM) return buf_map(b, cap); /* cap: 64 KiB times a power of two */
#endif
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

/* A column handed to Python without a copy: a Block owns the Buf's memory (freed with the
 * Block) and exposes it through the buffer protocol, so numpy.frombuffer views it in place.
 * Copying columns out (a bytearray each) would hold every column twice at the end of a scan
 * and fault in as many fresh pages again. */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t len;
    size_t cap;
    int mapped;
} Block;

static void block_dealloc(PyObject *self) {
    Block *b = (Block *)self;
    mem_free(b->data, b->cap, b->mapped);
    Py_TYPE(self)->tp_free(self);
}

static int block_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Block *b = (Block *)self;
    static char empty[1];
    return PyBuffer_FillInfo(view, self, b->data ? b->data : empty, b->len, 0, flags);
}

static PyBufferProcs block_buffer = {block_getbuffer, NULL};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hoibench.formats._colscan.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = block_dealloc,
    .tp_as_buffer = &block_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory of one column, owned and exposed through the buffer protocol.",
};

static PyObject *to_block(Buf *b) { /* the Buf is emptied: its memory now belongs to the Block */
    Block *o = PyObject_New(Block, &BlockType);
    if (!o) return NULL;
    o->data = b->data;
    o->len = (Py_ssize_t)b->len;
    o->cap = b->cap;
    o->mapped = b->mapped;
    memset(b, 0, sizeof(Buf));
    return (PyObject *)o;
}

typedef struct Schema Schema;

typedef struct {
    const char *key;
    Py_ssize_t keylen;
    int kind;
    Schema *sub;
    int col; /* index into the column table */
    int nulls, null_width; /* null taken for a number (NaN) / for an innermost list of this width */
    int f32;               /* numbers stored as float32 (kinds 2, 3, 4 and 8) */
} Field;

struct Schema {
    int strict; /* unknown keys refused */
    int nfields;
    Field *fields;
};

typedef struct {
    Buf occ, items, nums; /* int64 per slot */
    Buf data;             /* float64 values, or int64 (start, stop) pairs for strings */
    int64_t wmin, wmax;   /* lengths of the innermost lists (kinds 3, 4 and 8) */
    int64_t mmin, mmax;   /* lengths of the middle lists (kind 8) */
    int nonint;           /* a number written with a fraction or an exponent */
    int escaped;          /* a string holding a backslash escape */
    int nulls, null_width; /* the field's null rules (set as the field is parsed) */
    int f32;               /* values stored as float32, not float64 */
    int had_null;         /* a null was read (as NaN) */
} Col;

typedef struct Reducer Reducer;
typedef struct Half Half;

typedef struct {
    const unsigned char *base, *p, *end;
    int literal;
    Col *cols;
    int ncols;
    int64_t slot;  /* current counter slot */
    int in_unit;   /* inside the outermost list of objects */
    int float64;   /* literal mode: an identifier naming float64 (np.float64(x), dtype=float64) */
    Reducer *rd;   /* scan's `select`, applied to each element of the outermost list; or NULL */
    Py_ssize_t split_from; /* scan's `split`: where to look for the second half's start; -1: none */
    Half *half;    /* the second half of the outermost list, read by another thread; or NULL */
    int halves;    /* the second half's columns were used */
} Scan;

#define REFUSE (-1)
#define NOMEM (-2)

/* ------------------------------------------------------------------------------ numbers */
static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static uint64_t POW5[28];

static void init_pow5(void) {
    POW5[0] = 1;
    for (int i = 1; i < 28; i++) POW5[i] = POW5[i - 1] * 5;
}

/* m / 10^k, correctly rounded (round half to even), for 1 <= m < 2^64 and 1 <= k <= 27. */
static double div_pow10_exact(uint64_t m, int k) {
    uint64_t d = POW5[k];
    int bm = 64 - __builtin_clzll(m), bd = 64 - __builtin_clzll(d);
    int s = 63 + bd - bm; /* >= 2: the quotient lies in (2^62, 2^64) */
    unsigned __int128 n = (unsigned __int128)m << s;
    uint64_t q = (uint64_t)(n / d);
    uint64_t r = (uint64_t)(n - (unsigned __int128)q * d);
    int bq = 64 - __builtin_clzll(q);
    int shift = bq - 53;
    uint64_t mant = q >> shift, rem = q & ((UINT64_C(1) << shift) - 1), half = UINT64_C(1) << (shift - 1);
    if (rem > half || (rem == half && (r != 0 || (mant & 1)))) {
        mant += 1;
        if (mant == (UINT64_C(1) << 53)) {
            mant >>= 1;
            shift += 1;
        }
    }
    /* m / (5^k 2^k) = (n / d) 2^(-s-k) ~ mant 2^(shift-s-k) */
    return ldexp((double)mant, shift - s - k);
}

/* Eight ASCII digits at once (the SWAR trick of fast_float / simdjson). */
static inline uint64_t load8(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t eight_value(uint64_t v) {
    const uint64_t mask = UINT64_C(0x000000FF000000FF), mul1 = UINT64_C(0x000F424000000064),
                   mul2 = UINT64_C(0x0000271000000001);
    v -= UINT64_C(0x3030303030303030);
    v = (v * 10) + (v >> 8);
    return (((v & mask) * mul1) + (((v >> 16) & mask) * mul2)) >> 32;
}

static const uint64_t POW10_INT[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

/* The run of ASCII digits (0 to 8) that starts the 8 bytes at p, and its value: the lowest
 * byte flagged as not a digit ends the run (bytes below it are digits, so no carry or borrow
 * from them reaches it); the run is shifted to the top and '0's fill below, for eight_value. */
static inline int digit_run(const unsigned char *p, uint64_t *value) {
    uint64_t v = load8(p);
    uint64_t other = ((v + UINT64_C(0x4646464646464646)) | (v - UINT64_C(0x3030303030303030))) &
                     UINT64_C(0x8080808080808080);
    if (!other) {
        *value = eight_value(v);
        return 8;
    }
    int run = __builtin_ctzll(other) >> 3;
    *value = run ? eight_value((v << (8 * (8 - run))) | (UINT64_C(0x3030303030303030) >> (8 * run))) : 0;
    return run;
}

/* m / 10^k for 2^53 <= m < 2^64, 1 <= k <= 27: the floating quotient (two roundings), kept
 * when an exact integer test shows it within half an ulp of m / 10^k (strictly: a tie or a
 * power of two goes to div_pow10_exact), so the result is always the correctly rounded one. */
static inline double div_pow10(uint64_t m, int k) {
    double x = (double)m / (k <= 22 ? POW10[k] : POW10[22] * POW10[k - 22]);
    uint64_t bits;
    memcpy(&bits, &x, 8);
    int be = (int)((bits >> 52) & 0x7FF);
    uint64_t mant = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    int t = 1 - (be - 1075) - k; /* x = mant 2^(be-1075) */
    if (be == 0 || be == 0x7FF || mant == (UINT64_C(1) << 52) || t > 63 || t < -10) return div_pow10_exact(m, k);
    unsigned __int128 lo = (unsigned __int128)(2 * mant - 1) * POW5[k], hi = (unsigned __int128)(2 * mant + 1) * POW5[k];
    unsigned __int128 mm = (unsigned __int128)m;
    if (t >= 0) {
        mm <<= t;
    } else {
        lo <<= -t;
        hi <<= -t;
    }
    /* |m/10^k - x| < 2^(e-1)  <=>  (2 mant - 1) 5^k 2^k < m 2^(1-e) < (2 mant + 1) 5^k 2^k */
    if (lo < mm && mm < hi) return x;
    return div_pow10_exact(m, k);
}

static int slow_number(const unsigned char *start, const unsigned char *stop, double *out) {
    char tmp[512];
    size_t n = (size_t)(stop - start);
    if (n >= sizeof(tmp)) return REFUSE;
    memcpy(tmp, start, n);
    tmp[n] = 0;
    char *e;
    double v = strtod(tmp, &e);
    if (e != tmp + n) return REFUSE;
    *out = v;
    return 0;
}

/* One number at *pp (JSON grammar; in literal mode also "2." as numpy 1 prints it). */
static inline __attribute__((always_inline)) int scan_number(const unsigned char **pp, const unsigned char *end,
                                                             int literal, double *out, int *isint) {
    const unsigned char *p = *pp, *start = p;
    int neg = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end || (unsigned)(*p - '0') > 9) return REFUSE;
    uint64_t m = 0;
    int nd = 0;        /* significant digits held in m */
    int dropped = 0;   /* significant digits beyond 19 */
    int exp10 = 0;
    if (*p == '0') {
        p++;
        if (p < end && (unsigned)(*p - '0') <= 9) return REFUSE; /* leading zero */
    } else {
        /* digits by runs of up to 8 while they fit in m (19 digits); the rest one by one */
        while (end - p >= 8) {
            uint64_t v;
            int run = digit_run(p, &v);
            if (nd + run > 19) break;
            m = m * POW10_INT[run] + v;
            nd += run;
            p += run;
            if (run < 8) break;
        }
        while (p < end && (unsigned)(*p - '0') <= 9) {
            if (nd < 19) {
                m = m * 10 + (*p - '0');
                nd++;
            } else {
                dropped = 1;
                exp10++;
            }
            p++;
        }
    }
    int integral = 1;
    if (p < end && *p == '.') {
        integral = 0;
        p++;
        int digits = 0;
        if (m == 0) { /* zeros before the first significant digit only move the point */
            while (p < end && *p == '0') {
                exp10--;
                digits++;
                p++;
            }
        }
        while (end - p >= 8 && (unsigned)(*p - '0') <= 9) {
            uint64_t v;
            int run = digit_run(p, &v);
            if (nd + run > 19 || run < 2) break; /* a last digit is cheaper one by one */
            m = m * POW10_INT[run] + v;
            nd += run;
            exp10 -= run;
            digits += run;
            p += run;
            if (run < 8) break;
        }
        for (;;) {
            if (!(p < end && (unsigned)(*p - '0') <= 9)) break;
            digits++;
            if (m == 0 && *p == '0') {
                exp10--;
            } else if (nd < 19) {
                m = m * 10 + (*p - '0');
                nd++;
                exp10--;
            } else {
                dropped = 1;
            }
            p++;
        }
        if (!digits && !literal) return REFUSE;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        integral = 0;
        p++;
        int eneg = 0;
        if (p < end && (*p == '+' || *p == '-')) {
            eneg = *p == '-';
            p++;
        }
        if (p >= end || (unsigned)(*p - '0') > 9) return REFUSE;
        int e = 0;
        while (p < end && (unsigned)(*p - '0') <= 9) {
            if (e < 100000) e = e * 10 + (*p - '0');
            p++;
        }
        exp10 += eneg ? -e : e;
    }
    *pp = p;
    *isint = integral;
    double v;
    if (m == 0) {
        /* "-0" is the integer 0 (+0.0, as Python's float(int)); "-0.0" and "-0e0" keep the sign */
        *out = neg && !integral ? -0.0 : 0.0;
        return 0;
    } else if (dropped) {
        if (slow_number(start, p, &v)) return REFUSE;
        *out = v;
        return isfinite(v) ? 0 : REFUSE;
    } else if (exp10 == 0) {
        v = (double)m;
    } else if (m < (UINT64_C(1) << 53) && exp10 > 0 && exp10 <= 22) {
        v = (double)m * POW10[exp10];
    } else if (m < (UINT64_C(1) << 53) && exp10 < 0 && exp10 >= -22) {
        v = (double)m / POW10[-exp10];
    } else if (exp10 < 0 && exp10 >= -27) {
        v = m >= (UINT64_C(1) << 53) ? div_pow10(m, -exp10) : div_pow10_exact(m, -exp10);
    } else {
        if (slow_number(start, p, &v)) return REFUSE;
        *out = v;
        return isfinite(v) ? 0 : REFUSE;
    }
    *out = neg ? -v : v;
    return 0;
}

static int parse_number(Scan *s, double *out, int *isint) {
    return scan_number(&s->p, s->end, s->literal, out, isint);
}

/* ------------------------------------------------------------------------------ lexing */
static const unsigned char WS[256] = {[' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1};
/* literal mode: the text lies inside a JSON string, where a raw tab, newline or other control
 * byte is not allowed (json.loads refuses it): a space is its only raw white space */
static const unsigned char WS_LITERAL[256] = {[' '] = 1};

static inline void ws(Scan *s) {
    const unsigned char *p = s->p, *end = s->end, *white = s->literal ? WS_LITERAL : WS;
    for (;;) {
        while (p < end && white[*p]) p++;
        /* literal mode reads a Python text held in a JSON string: its newlines are "\n" there */
        if (s->literal && end - p >= 2 && p[0] == '\\' && p[1] == 'n') {
            p += 2;
            continue;
        }
        break;
    }
    s->p = p;
}

/* After an item of a list, dict or call: 1 at a comma (another item follows), 0 at `close`
 * (the container ends), REFUSE at anything else; the comma or `close` is consumed. */
static inline int separator(Scan *s, unsigned char close) {
    ws(s);
    if (s->p >= s->end) return REFUSE;
    if (*s->p == ',') {
        s->p++;
        return 1;
    }
    if (*s->p == close) {
        s->p++;
        return 0;
    }
    return REFUSE;
}

/* Right after an opening bracket: whether the container is empty (its `close` consumed). */
static inline int closes_at_once(Scan *s, unsigned char close) {
    ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 1;
    }
    return 0;
}

static inline int expect(Scan *s, unsigned char c) {
    ws(s);
    if (s->p >= s->end || *s->p != c) return REFUSE;
    s->p++;
    return 0;
}

static int utf8_ok(const unsigned char *p, const unsigned char *end) {
    while (p < end) {
        unsigned c = *p;
        if (c < 0x80) {
            p++;
            continue;
        }
        int n;
        unsigned cp;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (end - p <= n) return 0;
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        p += n + 1;
    }
    return 1;
}

static inline int hexdigit(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string at s->p (after white space): its contents' offsets and whether it holds escapes.
 * JSON: "..." with valid escapes; literal mode: '...' with no backslash and no '"' (else
 * refused: a raw '"' would end the JSON string the Python text is held in). */
static int parse_string(Scan *s, const unsigned char **a, const unsigned char **b, int *escaped) {
    const unsigned char *p = s->p, *end = s->end;
    unsigned char q = s->literal ? '\'' : '"';
    int other = s->literal ? '"' : -1; /* the quote that may not appear raw */
    if (p >= end || *p != q) return REFUSE;
    p++;
    const unsigned char *start = p;
    int esc = 0, high = 0;
    for (;;) {
        if (p >= end) return REFUSE;
        unsigned char c = *p;
        if (c == q) break;
        if (c < 0x20 || c == other) return REFUSE;
        if (c >= 0x80) high = 1;
        if (c == '\\') {
            if (s->literal) return REFUSE;
            esc = 1;
            p++;
            if (p >= end) return REFUSE;
            c = *p;
            if (c == 'u') {
                if (end - p < 5 || !hexdigit(p[1]) || !hexdigit(p[2]) || !hexdigit(p[3]) || !hexdigit(p[4]))
                    return REFUSE;
                p += 5;
                continue;
            }
            if (!strchr("\"\\/bfnrt", c) || c == 0) return REFUSE;
        }
        p++;
    }
    if (high && !utf8_ok(start, p)) return REFUSE;
    *a = start;
    *b = p;
    *escaped = esc;
    s->p = p + 1;
    return 0;
}

static int word(Scan *s, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n)) return REFUSE;
    const unsigned char *after = s->p + n;
    if (after < s->end && (isalnum(*after) || *after == '_')) return REFUSE;
    s->p = after;
    return 0;
}

static int ident(Scan *s) { /* a Python identifier, possibly dotted (np.float32) */
    const unsigned char *p = s->p;
    if (p >= s->end || !(isalpha(*p) || *p == '_')) return REFUSE;
    while (p < s->end && (isalnum(*p) || *p == '_' || *p == '.')) p++;
    if (p - s->p >= 7 && memmem(s->p, (size_t)(p - s->p), "float64", 7)) s->float64 = 1;
    s->p = p;
    return 0;
}

/* Whether [a, b) names a numpy type the careful reader (formats/_literal.py, _DTYPES) takes:
 * float/int/uint with 8, 16, 32 or 64 bits, float_, int_, intc, longlong, double, single, bool_,
 * str_; bare or after one "np." or "numpy."; with `array` also "array" (a call's name). */
static int numpy_name(const unsigned char *a, const unsigned char *b, int array) {
    static const char *const names[] = {"float_", "int_", "intc", "longlong", "double", "single", "bool_", "str_"};
    size_t n = (size_t)(b - a);
    if (n > 3 && memcmp(a, "np.", 3) == 0) {
        a += 3;
        n -= 3;
    } else if (n > 6 && memcmp(a, "numpy.", 6) == 0) {
        a += 6;
        n -= 6;
    }
    if (memchr(a, '.', n)) return 0;
    if (array && n == 5 && memcmp(a, "array", 5) == 0) return 1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == n && memcmp(a, names[i], n) == 0) return 1;
    size_t k = n >= 5 && memcmp(a, "float", 5) == 0 ? 5 : n >= 4 && memcmp(a, "uint", 4) == 0 ? 4
             : n >= 3 && memcmp(a, "int", 3) == 0 ? 3 : 0;
    if (!k) return 0;
    n -= k;
    a += k;
    return (n == 1 && *a == '8') || (n == 2 && (memcmp(a, "16", 2) == 0 || memcmp(a, "32", 2) == 0 ||
                                                memcmp(a, "64", 2) == 0));
}

/* An identifier that numpy_name takes (REFUSE otherwise). */
static int numpy_ident(Scan *s, int array) {
    const unsigned char *a = s->p;
    if (ident(s)) return REFUSE;
    return numpy_name(a, s->p, array) ? 0 : REFUSE;
}

/* A number, in literal mode also wrapped as np.<type>(number). */
static int number_value(Scan *s, double *v, int *isint) {
    ws(s);
    if (s->literal && s->p + 3 < s->end && memcmp(s->p, "np.", 3) == 0) {
        /* the wrappers numpy 2 prints for every number of a CDN/GEN-VLKT file, at once; any
         * other name through numpy_ident */
        const unsigned char *p = s->p + 3;
        if (s->end - p > 8 && memcmp(p, "float32(", 8) == 0) {
            s->p = p + 8;
        } else if (s->end - p > 6 && memcmp(p, "int64(", 6) == 0) {
            s->p = p + 6;
        } else if (numpy_ident(s, 0) || expect(s, '(')) {
            return REFUSE;
        }
        ws(s);
        if (parse_number(s, v, isint)) return REFUSE;
        return expect(s, ')');
    }
    return parse_number(s, v, isint);
}

static int skip_value(Scan *s, int depth);

static int skip_items(Scan *s, unsigned char close, int depth, int is_dict) {
    if (closes_at_once(s, close)) return 0;
    for (;;) {
        if (is_dict) {
            const unsigned char *a, *b;
            int esc;
            ws(s);
            if (parse_string(s, &a, &b, &esc) || expect(s, ':')) return REFUSE;
        }
        if (skip_value(s, depth + 1)) return REFUSE;
        int r = separator(s, close);
        if (r <= 0) return r;
        if (s->literal && closes_at_once(s, close)) return 0; /* Python allows a trailing comma: (1,) */
    }
}

/* Any value, validated and skipped (unknown keys). Literal mode: Python literals, np.<type>(x),
 * array(...) and other calls whose arguments are literals or keyword=identifier. */
static int skip_value(Scan *s, int depth) {
    if (depth > MAX_DEPTH) return REFUSE;
    ws(s);
    if (s->p >= s->end) return REFUSE;
    unsigned char c = *s->p;
    const unsigned char *a, *b;
    int esc;
    double v;
    int isint;
    if (c == '{') {
        s->p++;
        return skip_items(s, '}', depth, 1);
    }
    if (c == '[') {
        s->p++;
        return skip_items(s, ']', depth, 0);
    }
    if (c == (s->literal ? '\'' : '"')) return parse_string(s, &a, &b, &esc);
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(s, &v, &isint);
    if (!s->literal) return word(s, "true") && word(s, "false") && word(s, "null") ? REFUSE : 0;
    if (c == '(') {
        s->p++;
        return skip_items(s, ')', depth, 0);
    }
    if (!word(s, "True") || !word(s, "False") || !word(s, "None")) return 0;
    /* a call as the careful reader takes one: array(x) or <numpy type>(x), one positional
     * literal and keywords dtype=<numpy type> only; anything else is refused */
    if (numpy_ident(s, 1) || expect(s, '(')) return REFUSE;
    int positional = 0;
    for (;;) {
        ws(s);
        const unsigned char *save = s->p;
        if (!ident(s)) {
            const unsigned char *name_end = s->p;
            ws(s);
            if (s->p < s->end && *s->p == '=') {
                if (name_end - save != 5 || memcmp(save, "dtype", 5) != 0) return REFUSE;
                s->p++;
                ws(s);
                if (numpy_ident(s, 0)) return REFUSE;
            } else {
                s->p = save;
                if (skip_value(s, depth + 1)) return REFUSE;
                positional++;
            }
        } else {
            s->p = save;
            if (skip_value(s, depth + 1)) return REFUSE;
            positional++;
        }
        int r = separator(s, ')');
        if (r < 0) return r;
        if (r == 0) return positional == 1 ? 0 : REFUSE;
    }
}

typedef struct {
    double s;
    int64_t cell;
} Cand;

static inline int better(const Cand *a, const Cand *b) { /* a before b */
    int an = isnan(a->s), bn = isnan(b->s);
    if (an != bn) return bn;
    if (!an && a->s != b->s) return a->s > b->s;
    return a->cell < b->cell;
}

static int cand_cmp(const void *x, const void *y) {
    const Cand *a = x, *b = y;
    return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

/* a heap whose root is the worst kept candidate */
static void sift_down(Cand *h, int64_t n, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && better(&h[w], &h[l])) w = l;
        if (r < n && better(&h[w], &h[r])) w = r;
        if (w == i) return;
        Cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void sift_up(Cand *h, int64_t i) {
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!better(&h[p], &h[i])) return;
        Cand t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}


/* Per image (a slot), the best k cells (pair * ncol + column) of a pairs x ncol score table
 * among those whose valid[row of the pair][column] is set, best first (score descending, NaN
 * last, ties by cell): what a stable argsort of the negated valid scores keeps (QPIC's
 * evaluator). k < 0: every valid cell. */
typedef struct {
    const unsigned char *valid; /* n_rows x ncol */
    int64_t n_rows, ncol, k;
    Cand *heap;
    int64_t cap;
    Buf cells, scores, kept; /* int64 cells, float64 scores, int64 per image */
} Selector;

static void selector_free(Selector *sel) {
    free(sel->heap);
    buf_free(&sel->cells);
    buf_free(&sel->scores);
    buf_free(&sel->kept);
}

static int select_image(Selector *sel, const double *scores, int64_t n_pairs, const int64_t *pair_row) {
    int64_t ncol = sel->ncol, n = 0;
    int64_t room = sel->k >= 0 ? sel->k : n_pairs * ncol;
    if (room > sel->cap) {
        Cand *h = realloc(sel->heap, (size_t)room * sizeof(Cand));
        if (!h) return NOMEM;
        sel->heap = h;
        sel->cap = room;
    }
    Cand *heap = sel->heap;
    for (int64_t p = 0; p < n_pairs; p++) {
        const unsigned char *row = sel->valid + pair_row[p] * ncol;
        const double *sc = scores + p * ncol;
        for (int64_t j = 0; j < ncol; j++) {
            if (!row[j]) continue;
            Cand c = {sc[j], p * ncol + j};
            if (n < room) {
                heap[n] = c;
                if (sel->k >= 0) sift_up(heap, n);
                n++;
            } else if (room > 0 && better(&c, &heap[0])) {
                heap[0] = c;
                sift_down(heap, n, 0);
            }
        }
    }
    if (n > 1) qsort(heap, (size_t)n, sizeof(Cand), cand_cmp); /* (heap is NULL when nothing was kept) */
    if (buf_reserve(&sel->cells, (size_t)n * 8) || buf_reserve(&sel->scores, (size_t)n * 8) ||
        buf_reserve(&sel->kept, 8))
        return NOMEM;
    int64_t *cells = (int64_t *)(sel->cells.data + sel->cells.len);
    double *out = (double *)(sel->scores.data + sel->scores.len);
    for (int64_t i = 0; i < n; i++) {
        cells[i] = heap[i].cell;
        out[i] = heap[i].s;
    }
    sel->cells.len += (size_t)n * 8;
    sel->scores.len += (size_t)n * 8;
    memcpy(sel->kept.data + sel->kept.len, &n, 8);
    sel->kept.len += 8;
    return 0;
}

static PyObject *selection_tuple(Selector *sel) {
    return Py_BuildValue("(NNN)", to_block(&sel->cells), to_block(&sel->scores), to_block(&sel->kept));
}

/* The per-record reduction of a QPIC-style score table (scan's `select`): once an outermost
 * object is read, its pairs x ncol scores are replaced by their best valid cells (the row of a
 * pair: row_of_label[labels[pairs[pair]]]), so a file of 10^8 scores never holds them all. */
struct Reducer {
    int on, scores, pairs, labels, boxes; /* column indices */
    const int64_t *row_of_label;
    int64_t n_labels;
    Selector sel;
    Buf rows; /* scratch: each pair's row of `valid` */
};

/* ------------------------------------------------------------------------------ columns */
static inline int64_t *counter(Buf *b, int64_t slot) { return ((int64_t *)b->data) + slot; }

static inline int push_double(Col *c, double v) { /* as a float where the column is float32 */
    size_t esz = c->f32 ? sizeof(float) : sizeof(double);
    if (c->data.len + esz > c->data.cap && buf_reserve(&c->data, esz)) return NOMEM;
    if (c->f32) {
        float f = (float)v;
        memcpy(c->data.data + c->data.len, &f, esz);
    } else {
        memcpy(c->data.data + c->data.len, &v, esz);
    }
    c->data.len += esz;
    return 0;
}

static int add_slot(Scan *s) { /* a new slot: every counter starts at zero */
    for (int i = 0; i < s->ncols; i++) {
        Col *c = &s->cols[i];
        if (buf_reserve(&c->occ, 8) || buf_reserve(&c->items, 8) || buf_reserve(&c->nums, 8)) return NOMEM;
        memset(c->occ.data + c->occ.len, 0, 8);
        memset(c->items.data + c->items.len, 0, 8);
        memset(c->nums.data + c->nums.len, 0, 8);
        c->occ.len += 8;
        c->items.len += 8;
        c->nums.len += 8;
    }
    return 0;
}

/* An innermost list of n numbers read: its width and numbers counted. */
static inline void innermost_done(Scan *s, Col *c, int64_t n) {
    if (n < c->wmin) c->wmin = n;
    if (n > c->wmax) c->wmax = n;
    *counter(&c->nums, s->slot) += n;
}

/* An innermost list given as null: null_width NaNs, a row of that width. */
static int null_row(Scan *s, Col *c) {
    s->p += 4;
    for (int i = 0; i < c->null_width; i++)
        if (push_double(c, NAN)) return NOMEM;
    c->had_null = 1;
    innermost_done(s, c, c->null_width);
    return 0;
}

static inline int at_null(Scan *s) {
    ws(s);
    return s->end - s->p >= 4 && memcmp(s->p, "null", 4) == 0;
}

/* A list of numbers (rows = 0: kind 3; 2: a row of kind 4 or 8), a list of such rows (rows = 1:
 * kind 4; 4: the middle level of kind 8) or a list of those (rows = 3: kind 8). In literal mode a
 * list may be wrapped: array([...], dtype=float32). items counts the elements of the outer list. */
static int numbers_list(Scan *s, Col *c, int rows) {
    ws(s);
    int wrapped = 0;
    if (s->literal && s->end - s->p > 6 && memcmp(s->p, "array(", 6) == 0) {
        s->p += 6;
        wrapped = 1;
        ws(s);
    }
    if (s->p >= s->end || *s->p != '[') return REFUSE;
    s->p++;
    int64_t n = 0;
    if (!closes_at_once(s, ']')) {
        for (;;) {
            if (rows == 1 || rows == 4) {
                int r = c->null_width > 0 && at_null(s) ? null_row(s, c) : numbers_list(s, c, 2);
                if (r) return r;
                n++;
            } else if (rows == 3) {
                int r = numbers_list(s, c, 4);
                if (r) return r;
                n++;
            } else {
                /* the hot loop: plain numbers, read with local pointers */
                const unsigned char *p = s->p, *end = s->end;
                int literal = s->literal, nonint = 0;
                const unsigned char *white = literal ? WS_LITERAL : WS;
                /* the column's end kept in locals (a store through char * could alias them) */
                const int f32 = c->f32;
                const size_t esz = f32 ? sizeof(float) : sizeof(double);
                char *out = c->data.data ? c->data.data + c->data.len : NULL;
                char *stop = c->data.data ? c->data.data + c->data.cap - c->data.cap % esz : NULL;
                const uint64_t zeros = load8((const unsigned char *)"0.0,0.0,"),
                               zeros_sp = load8((const unsigned char *)"0.0, 0.0");
                for (;;) {
                    while (p < end && white[*p]) p++;
                    double v;
                    int isint;
                    /* runs of zeros (a QPIC file's verb scores are 99 % zeros) at once: four
                     * compact "0.0," or two "0.0, " (json.dump's default separators) */
                    int run = end - p >= 16 && load8(p) == zeros && load8(p + 8) == zeros ? 4
                            : end - p >= 10 && load8(p) == zeros_sp && p[8] == ',' && p[9] == ' ' ? 2 : 0;
                    if (run && out && stop - out >= (ptrdiff_t)(run * esz)) {
                        memset(out, 0, run * esz);
                        out += run * esz;
                        n += run;
                        nonint = 1;
                        p += run == 4 ? 16 : 10;
                        continue;
                    }
                    if (end - p >= 4 && (memcmp(p, "0.0,", 4) == 0 || memcmp(p, "0.0]", 4) == 0)) {
                        v = 0.0; /* most of a QPIC file's verb scores */
                        isint = 0;
                        p += 3;
                    } else if (p < end && (*p == '-' || (unsigned)(*p - '0') <= 9)) {
                        if (scan_number(&p, end, literal, &v, &isint)) return REFUSE;
                    } else if (c->nulls && end - p >= 4 && memcmp(p, "null", 4) == 0) {
                        v = NAN;
                        isint = 1; /* no number was written with a fraction */
                        c->had_null = 1;
                        p += 4;
                    } else {
                        s->p = p;
                        if (number_value(s, &v, &isint)) return REFUSE;
                        p = s->p;
                    }
                    nonint |= !isint;
                    if (out >= stop) {
                        c->data.len = out ? (size_t)(out - c->data.data) : 0;
                        if (buf_reserve(&c->data, 4096)) return NOMEM;
                        out = c->data.data + c->data.len;
                        stop = c->data.data + c->data.cap - c->data.cap % esz;
                    }
                    if (f32) { /* rounded to nearest as numpy's astype(float32) rounds the double */
                        float f = (float)v;
                        memcpy(out, &f, sizeof f);
                    } else {
                        memcpy(out, &v, sizeof v);
                    }
                    out += esz;
                    n++;
                    if (p < end && *p == ',') { /* compact JSON: the comma right after */
                        p++;
                        continue;
                    }
                    while (p < end && white[*p]) p++;
                    if (p < end && *p == ',') {
                        p++;
                        continue;
                    }
                    break;
                }
                if (out) c->data.len = (size_t)(out - c->data.data);
                if (nonint) c->nonint = 1;
                s->p = p; /* a comma after a literal-mode escaped newline goes on below */
            }
            int r = separator(s, ']');
            if (r < 0) return r;
            if (r == 0) break;
        }
    }
    if (wrapped) {
        ws(s);
        if (s->p < s->end && *s->p == ',') { /* dtype=name */
            s->p++;
            ws(s);
            if (word(s, "dtype") || expect(s, '=')) return REFUSE;
            ws(s);
            if (numpy_ident(s, 0)) return REFUSE;
        }
        if (expect(s, ')')) return REFUSE;
    }
    if (rows == 4) { /* a middle list */
        if (n < c->mmin) c->mmin = n;
        if (n > c->mmax) c->mmax = n;
    }
    if (rows == 0 || rows == 2) innermost_done(s, c, n);
    if (rows == 0 || rows == 1 || rows == 3) *counter(&c->items, s->slot) += n; /* the outermost */
    return 0;
}

static int parse_object(Scan *s, Schema *sc, int depth);

static int reduce_record(Scan *s, Reducer *rd);

static void half_start(Scan *s, Schema *sc, int depth, int rec_col);
static int half_land(Scan *s);
static void half_abandon(Scan *s);

/* One object of a list of objects; an element of the outermost such list gets a slot of its
 * own for everything inside it (and the reduction, when scan has one). */
static int parse_element(Scan *s, Schema *sc, int depth, int outer) {
    if (!outer) return parse_object(s, sc, depth);
    int64_t parent = s->slot;
    if (add_slot(s)) return NOMEM;
    s->slot = (int64_t)(s->cols[0].occ.len / 8) - 1;
    s->in_unit = 1;
    int r = parse_object(s, sc, depth);
    if (!r && s->rd) r = reduce_record(s, s->rd);
    s->in_unit = 0;
    s->slot = parent;
    return r;
}

static int parse_records(Scan *s, Field *f, int depth) {
    Col *c = &s->cols[f->col];
    int outer = !s->in_unit;
    ws(s);
    if (s->p >= s->end || *s->p != '[') return REFUSE;
    s->p++;
    if (closes_at_once(s, ']')) return 0;
    if (outer) half_start(s, f->sub, depth + 1, f->col);
    for (;;) {
        int r = parse_element(s, f->sub, depth + 1, outer);
        if (r) return r;
        *counter(&c->items, s->slot) += 1;
        if (outer && s->half) {
            r = half_land(s); /* 1: the other thread read the rest of the list, through its `]` */
            if (r) return r < 0 ? r : 0;
        }
        r = separator(s, ']');
        if (r <= 0) {
            if (outer) half_abandon(s);
            return r;
        }
    }
}

/* A string: its (start, stop) byte offsets appended to the column, one item. */
static int string_value(Scan *s, Col *c) {
    const unsigned char *a, *b;
    int esc;
    if (parse_string(s, &a, &b, &esc)) return REFUSE;
    if (esc) c->escaped = 1;
    if (buf_reserve(&c->data, 16)) return NOMEM;
    int64_t pair[2] = {a - s->base, b - s->base};
    memcpy(c->data.data + c->data.len, pair, 16);
    c->data.len += 16;
    *counter(&c->items, s->slot) += 1;
    return 0;
}

static int parse_field(Scan *s, Field *f, int depth) {
    Col *c = &s->cols[f->col];
    *counter(&c->occ, s->slot) += 1;
    c->nulls = f->nulls;
    c->null_width = f->null_width;
    c->f32 = f->f32;
    ws(s);
    switch (f->kind) {
    case K_STR:
        return string_value(s, c);
    case K_STRS: {
        if (expect(s, '[')) return REFUSE;
        if (closes_at_once(s, ']')) return 0;
        for (;;) {
            ws(s);
            int r = string_value(s, c);
            if (r) return r;
            r = separator(s, ']');
            if (r <= 0) return r;
        }
    }
    case K_NUM: {
        double v;
        int isint;
        if (number_value(s, &v, &isint)) return REFUSE;
        if (!isint) c->nonint = 1;
        if (push_double(c, v)) return NOMEM;
        *counter(&c->items, s->slot) += 1;
        *counter(&c->nums, s->slot) += 1;
        return 0;
    }
    case K_NUMS1:
        return numbers_list(s, c, 0);
    case K_NUMS2:
        return numbers_list(s, c, 1);
    case K_NUMS3:
        return numbers_list(s, c, 3);
    case K_RECORDS:
        return parse_records(s, f, depth);
    case K_OBJECT:
        return parse_object(s, f->sub, depth + 1);
    }
    return REFUSE;
}

static int parse_object(Scan *s, Schema *sc, int depth) {
    if (depth > MAX_DEPTH) return REFUSE;
    ws(s);
    if (s->p >= s->end || *s->p != '{') return REFUSE;
    s->p++;
    uint64_t seen = 0; /* schema fields met (at most 64 fields a schema) */
    const unsigned char *unknown[MAX_UNKNOWN][2];
    int n_unknown = 0;
    if (closes_at_once(s, '}')) return 0;
    for (;;) {
        const unsigned char *a, *b;
        int esc;
        ws(s);
        if (parse_string(s, &a, &b, &esc)) return REFUSE;
        if (esc) return REFUSE; /* an escaped key could spell a known one: the careful reader */
        if (expect(s, ':')) return REFUSE;
        Py_ssize_t n = b - a;
        int hit = -1;
        for (int i = 0; i < sc->nfields; i++) {
            if (sc->fields[i].keylen == n && memcmp(sc->fields[i].key, a, (size_t)n) == 0) {
                hit = i;
                break;
            }
        }
        if (hit >= 0) {
            if (seen & (UINT64_C(1) << hit)) return REFUSE; /* duplicate key */
            seen |= UINT64_C(1) << hit;
            int r = parse_field(s, &sc->fields[hit], depth);
            if (r) return r;
        } else {
            if (sc->strict || n_unknown == MAX_UNKNOWN) return REFUSE;
            for (int i = 0; i < n_unknown; i++)
                if (unknown[i][1] - unknown[i][0] == n && memcmp(unknown[i][0], a, (size_t)n) == 0) return REFUSE;
            unknown[n_unknown][0] = a;
            unknown[n_unknown][1] = b;
            n_unknown++;
            if (skip_value(s, depth + 1)) return REFUSE;
        }
        int r = separator(s, '}');
        if (r <= 0) return r;
    }
}

/* ------------------------------------------------------------------------------ schema */
static void free_schema(Schema *sc) {
    if (!sc) return;
    for (int i = 0; i < sc->nfields; i++) free_schema(sc->fields[i].sub);
    free(sc->fields);
    free(sc);
}

/* Schema from Python; keys point into the Python bytes objects (kept alive by the caller). */
static Schema *build_schema(PyObject *obj, int *ncols) {
    PyObject *strict, *fields;
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2) {
        PyErr_SetString(PyExc_TypeError, "schema: (strict, fields)");
        return NULL;
    }
    strict = PyTuple_GET_ITEM(obj, 0);
    fields = PyTuple_GET_ITEM(obj, 1);
    if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) > 64) {
        PyErr_SetString(PyExc_TypeError, "schema: fields must be a tuple of at most 64");
        return NULL;
    }
    Schema *sc = calloc(1, sizeof(Schema));
    if (!sc) return (Schema *)PyErr_NoMemory();
    sc->strict = PyObject_IsTrue(strict);
    sc->nfields = (int)PyTuple_GET_SIZE(fields);
    sc->fields = calloc(sc->nfields ? sc->nfields : 1, sizeof(Field));
    if (!sc->fields) {
        free(sc);
        return (Schema *)PyErr_NoMemory();
    }
    for (int i = 0; i < sc->nfields; i++) {
        PyObject *f = PyTuple_GET_ITEM(fields, i);
        char *key;
        Py_ssize_t keylen;
        int kind, nulls = 0, null_width = 0, f32 = 0;
        PyObject *sub;
        if (!PyTuple_Check(f) ||
            !PyArg_ParseTuple(f, "y#iO|iii", &key, &keylen, &kind, &sub, &nulls, &null_width, &f32)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "field: (key, kind, sub[, nulls, null_width, f32])");
            free_schema(sc);
            return NULL;
        }
        Field *fd = &sc->fields[i];
        fd->key = key;
        fd->keylen = keylen;
        fd->kind = kind;
        fd->nulls = nulls;
        fd->null_width = null_width;
        fd->f32 = f32;
        fd->col = (*ncols)++;
        if (kind < K_STR || kind > K_NUMS3 || null_width < 0) {
            PyErr_SetString(PyExc_ValueError, "field: unknown kind");
            free_schema(sc);
            return NULL;
        }
        if (kind == K_RECORDS || kind == K_OBJECT) {
            fd->sub = build_schema(sub, ncols);
            if (!fd->sub) {
                free_schema(sc);
                return NULL;
            }
        }
    }
    return sc;
}


static int reduce_record(Scan *s, Reducer *rd) {
    int64_t slot = s->slot, ncol = rd->sel.ncol;
    Col *vs = &s->cols[rd->scores], *pc = &s->cols[rd->pairs], *lc = &s->cols[rd->labels], *bc = &s->cols[rd->boxes];
    int64_t n_pairs = *counter(&vs->items, slot), nv = *counter(&vs->nums, slot);
    if (nv == 0) { /* no detections: nothing kept, the other arrays not looked at */
        if (buf_reserve(&rd->sel.kept, 8)) return NOMEM;
        memset(rd->sel.kept.data + rd->sel.kept.len, 0, 8);
        rd->sel.kept.len += 8;
        return 0;
    }
    int64_t nb = *counter(&bc->items, slot), nl = *counter(&lc->nums, slot);
    if (nv != n_pairs * ncol || *counter(&pc->nums, slot) != n_pairs || nl != nb) return REFUSE;
    const double *scores = (const double *)(vs->data.data + vs->data.len) - nv;
    const double *pairs = (const double *)(pc->data.data + pc->data.len) - n_pairs;
    const double *labels = (const double *)(lc->data.data + lc->data.len) - nl;
    if (buf_reserve(&rd->rows, (size_t)n_pairs * 8)) return NOMEM;
    int64_t *rows = (int64_t *)rd->rows.data;
    for (int64_t p = 0; p < n_pairs; p++) {
        double o = pairs[p];
        if (!(o >= 0 && o < (double)nb) || o != floor(o)) return REFUSE; /* the careful reader names it */
        double lab = labels[(int64_t)o];
        if (!(lab >= 0 && lab < (double)rd->n_labels) || lab != floor(lab)) return REFUSE;
        rows[p] = rd->row_of_label[(int64_t)lab];
    }
    int r = select_image(&rd->sel, scores, n_pairs, rows);
    vs->data.len -= (size_t)nv * 8; /* the scores are dropped once selected */
    return r;
}


/* ------------------------------------------------------------------------------ two halves */
/* The outermost list of objects read by two threads (scan's `split`): a second thread starts at
 * a comma past `split` that looks like the boundary of two elements ("}" before it, "{" after
 * it) and reads the elements from there to the list's end into columns of its own, while this
 * thread reads from the start. The guess is only used when this thread, reading the list
 * itself, ends an element exactly at that comma: then the text after it is what this thread
 * would have read next, the same way, and the other thread's columns are appended to its own.
 * Otherwise (the comma lay inside a string, a nested list or another list; the other thread
 * refused) its work is dropped and this thread reads on alone: the result never depends on the
 * guess. */
#if defined(_WIN32)
#define HAVE_HALVES 0
#define FLAG_SET(x) ((x) = 1)
#define FLAG_GET(x) (x)
#else
#define HAVE_HALVES 1
#include <pthread.h>
#define FLAG_SET(x) __atomic_store_n(&(x), 1, __ATOMIC_RELAXED)
#define FLAG_GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#endif

struct Half {
    Scan s; /* the second thread's state: columns (and reducer) of its own */
    Reducer rd;
    Schema *sc;
    int depth, rec_col;
    size_t split; /* offset of the comma the first thread must end an element at */
    int r;        /* the second thread's result: 0, the list read through its `]` */
    int abandon;  /* set once its work cannot be used */
#if HAVE_HALVES
    pthread_t th;
#endif
    int joined;
};

#if HAVE_HALVES
/* p after whitespace (and literal mode's "\n") backwards: the byte before it, or -1. */
static int byte_before(const Scan *s, const unsigned char **p) {
    const unsigned char *q = *p;
    while (q > s->base) {
        if (WS[q[-1]]) q--;
        else if (s->literal && q - s->base >= 2 && q[-1] == 'n' && q[-2] == '\\') q -= 2;
        else break;
    }
    *p = q > s->base ? q - 1 : q;
    return q > s->base ? q[-1] : -1;
}

/* The comma of the first "}, {<key>" at or after p within `limit`, where <key> is the first
 * element's first key with its quotes (nested objects start with other keys), or "}, {" when
 * it has none; NULL when there is none. */
static const unsigned char *element_boundary(const Scan *s, const unsigned char *p, const unsigned char *limit,
                                             const unsigned char *key, size_t keylen) {
    for (;;) {
        const unsigned char *q = memmem(p, (size_t)(limit - p), keylen ? key : (const unsigned char *)"{", keylen ? keylen : 1);
        if (!q) return NULL;
        p = q + 1;
        const unsigned char *at = q;
        if (keylen && byte_before(s, &at) != '{') continue;
        if (byte_before(s, &at) != ',') continue;
        const unsigned char *comma = at;
        if (byte_before(s, &at) == '}') return comma;
    }
}

static void *half_run(void *arg) {
    Half *h = arg;
    Scan *s = &h->s;
    int r = add_slot(s);
    int sep = r ? 0 : separator(s, ']'); /* the comma */
    while (!r && sep > 0) {
        if (FLAG_GET(h->abandon)) {
            r = REFUSE;
            break;
        }
        r = parse_element(s, h->sc, h->depth, 1);
        if (r) break;
        *counter(&s->cols[h->rec_col].items, 0) += 1;
        sep = separator(s, ']');
    }
    if (!r && sep < 0) r = REFUSE;
    h->r = r;
    return NULL;
}
#endif

static void cols_free(Col *cols, int ncols) {
    if (!cols) return;
    for (int i = 0; i < ncols; i++) {
        buf_free(&cols[i].occ);
        buf_free(&cols[i].items);
        buf_free(&cols[i].nums);
        buf_free(&cols[i].data);
    }
    free(cols);
}

static Col *cols_new(int ncols) {
    Col *cols = calloc((size_t)ncols, sizeof(Col));
    if (!cols) return NULL;
    for (int i = 0; i < ncols; i++) {
        cols[i].wmin = cols[i].mmin = INT64_MAX;
        cols[i].wmax = cols[i].mmax = -1;
    }
    return cols;
}

static void half_join(Half *h) {
    if (h->joined) return;
#if HAVE_HALVES
    pthread_join(h->th, NULL);
#endif
    h->joined = 1;
}

/* The list's first element is being read: start the second thread (once per scan). */
static void half_start(Scan *s, Schema *sc, int depth, int rec_col) {
#if HAVE_HALVES
    if (s->split_from < 0 || s->half) return;
    const unsigned char *p = s->base + s->split_from, *limit;
    s->split_from = -1;
    if (p < s->p) p = s->p;
    limit = s->end - p > (1 << 20) ? p + (1 << 20) : s->end; /* a boundary within 1 MiB, or none */
    ws(s);
    const unsigned char *key = s->p + 1, *key_end; /* the first key, quotes included: after "{" */
    while (key < s->end && (WS[*key] || (s->literal && *key == '\\' && key + 1 < s->end && key[1] == 'n')))
        key += WS[*key] ? 1 : 2;
    key_end = key < s->end && (*key == '"' || *key == '\'') ? memchr(key + 1, *key, (size_t)(s->end - key - 1)) : NULL;
    size_t keylen = key_end && key_end - key < 256 && !memchr(key, '\\', (size_t)(key_end - key)) ? (size_t)(key_end - key + 1) : 0;
    p = element_boundary(s, p, limit, key, keylen);
    if (!p) return;
    Half *h = calloc(1, sizeof(Half));
    if (!h) return;
    h->s = (Scan){.base = s->base, .p = p, .end = s->end, .literal = s->literal, .ncols = s->ncols,
                  .split_from = -1, .cols = cols_new(s->ncols)};
    if (!h->s.cols) {
        free(h);
        return;
    }
    if (s->rd) { /* the same reduction, into a selection of its own */
        h->rd = *s->rd;
        memset(&h->rd.sel.heap, 0, sizeof(Selector) - offsetof(Selector, heap));
        memset(&h->rd.rows, 0, sizeof(Buf));
        h->s.rd = &h->rd;
    }
    h->sc = sc;
    h->depth = depth;
    h->rec_col = rec_col;
    h->split = (size_t)(p - s->base);
    if (pthread_create(&h->th, NULL, half_run, h)) {
        cols_free(h->s.cols, h->s.ncols);
        free(h);
        return;
    }
    s->half = h;
#else
    (void)s, (void)sc, (void)depth, (void)rec_col;
#endif
}

static void half_abandon(Scan *s) {
    if (!s->half) return;
    FLAG_SET(s->half->abandon);
    half_join(s->half);
}

static void half_free(Scan *s) {
    Half *h = s->half;
    if (!h) return;
    half_abandon(s);
    cols_free(h->s.cols, h->s.ncols);
    selector_free(&h->rd.sel);
    buf_free(&h->rd.rows);
    free(h);
    s->half = NULL;
}

#if defined(__linux__)
/* src's mapping moved (mremap, no copy) to the first page boundary after dst's bytes, then its
 * bytes shifted back onto them (less than a page): no fresh page is touched, where a copy would
 * fault in as many pages as src holds (~10 us each on a virtual machine). src is emptied. */
static int buf_splice(Buf *dst, Buf *src) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), head = (dst->len + page - 1) / page * page;
    if (!dst->mapped || dst->cap < head + src->cap) {
        if (buf_map(dst, head + src->cap)) return -1;
    }
    if (mremap(src->data, src->cap, src->cap, MREMAP_MAYMOVE | MREMAP_FIXED, dst->data + head) == MAP_FAILED)
        return -1;
    memmove(dst->data + dst->len, dst->data + head, src->len);
    dst->len += src->len;
    memset(src, 0, sizeof(Buf));
    return 0;
}
#endif

static int buf_append(Buf *dst, Buf *src, size_t from) { /* src's bytes from `from` on */
    size_t n = src->len - from;
    if (!n) return 0;
    if (!dst->len && !from) { /* nothing to keep: take the memory over */
        buf_free(dst);
        *dst = *src;
        memset(src, 0, sizeof(Buf));
        return 0;
    }
#if defined(__linux__)
    if (!from && src->mapped && !buf_splice(dst, src)) return 0;
#endif
    if (buf_reserve(dst, n)) return NOMEM;
    memcpy(dst->data + dst->len, src->data + from, n);
    dst->len += n;
    return 0;
}

/* The other thread's columns after this thread's: its slot 0 added to the list's slot, its
 * elements' slots appended. */
static int half_merge(Scan *s, Half *h) {
    for (int i = 0; i < s->ncols; i++) {
        Col *c = &s->cols[i], *o = &h->s.cols[i];
        Buf *mine[3] = {&c->occ, &c->items, &c->nums}, *theirs[3] = {&o->occ, &o->items, &o->nums};
        for (int k = 0; k < 3; k++) {
            *counter(mine[k], s->slot) += *counter(theirs[k], 0);
            if (buf_append(mine[k], theirs[k], 8)) return NOMEM;
        }
        if (o->data.len) {
            c->f32 = o->f32;
            c->nulls = o->nulls;
            c->null_width = o->null_width;
        }
        if (buf_append(&c->data, &o->data, 0)) return NOMEM;
        buf_free(&o->data); /* at once: the merge's peak holds one column twice at most */
        if (o->wmin < c->wmin) c->wmin = o->wmin;
        if (o->wmax > c->wmax) c->wmax = o->wmax;
        if (o->mmin < c->mmin) c->mmin = o->mmin;
        if (o->mmax > c->mmax) c->mmax = o->mmax;
        c->nonint |= o->nonint;
        c->escaped |= o->escaped;
        c->had_null |= o->had_null;
    }
    s->float64 |= h->s.float64;
    if (s->rd && (buf_append(&s->rd->sel.cells, &h->rd.sel.cells, 0) ||
                  buf_append(&s->rd->sel.scores, &h->rd.sel.scores, 0) ||
                  buf_append(&s->rd->sel.kept, &h->rd.sel.kept, 0)))
        return NOMEM;
    return 0;
}

/* After an element of the outermost list: 1 when this thread stands at the other's start and
 * has taken its columns (the list is read through its `]`), NOMEM, or 0 (read on). */
static int half_land(Scan *s) {
    Half *h = s->half;
    if (h->joined) return 0;
    ws(s);
    size_t at = (size_t)(s->p - s->base);
    if (at < h->split) return 0;
    if (at > h->split) { /* the guess was not a boundary of this list */
        half_abandon(s);
        return 0;
    }
    half_join(h);
    if (h->r == NOMEM) return NOMEM;
    if (h->r) return 0; /* refused: reading on alone meets the same refusal and says so */
    int r = half_merge(s, h);
    if (r) return r;
    s->p = h->s.p;
    s->halves = 1;
    return 1;
}

/* scan(buffer, pos, root_field, literal, limit=-1, resume=False, select=None, split=-1)
 *   -> None (refused) or (stop, done, n_slots, columns, selection, float64, halves)
 * root_field: (key, 5 or 6, schema). With a kind-5 root, `limit` elements at most are read
 * (-1: all) and `resume` continues after an element (the next byte is "," or "]"); `done`
 * tells whether the list closed. columns: per field in depth-first order,
 * (occ, items, nums, data, wmin, wmax, nonint, escaped, had_null, mmin, mmax), the first three
 * int64 per slot (mmin, mmax: the middle lists' lengths of a kind-8 field).
 * select (kind-5 root only): (scores, pairs, labels, boxes, row_of_label, valid, ncol, k), four
 * column indices, int64 bytes (one row of `valid` per label, every row inside), uint8 bytes
 * (rows x ncol), the table's width and k: each element's scores are reduced (Reducer) and the
 * selection is (cells, scores, kept per element) as Blocks (else None). float64: in
 * literal mode, whether an identifier (np.float64, dtype=float64) named float64.
 * split (-1: none): the outermost list is read in two halves, the second by another thread from
 * the first boundary of two elements after that offset ("two halves" above); halves: whether
 * its columns were used (the result is the same either way). */
static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t pos, limit = -1, split = -1;
    PyObject *root, *select = Py_None;
    int literal, resume = 0;
    if (!PyArg_ParseTuple(args, "y*nOp|npOn", &view, &pos, &root, &literal, &limit, &resume, &select, &split))
        return NULL;
    Reducer rd;
    memset(&rd, 0, sizeof(rd));
    PyObject *result = NULL;
    int ncols = 1;
    Schema *sc = NULL;
    Col *cols = NULL;
    char *key;
    Py_ssize_t keylen;
    int kind;
    PyObject *sub;
    int root_nulls, root_width, root_f32;
    if (!PyTuple_Check(root) ||
        !PyArg_ParseTuple(root, "y#iO|iii", &key, &keylen, &kind, &sub, &root_nulls, &root_width, &root_f32) ||
        (kind != K_RECORDS && kind != K_OBJECT)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "root: (key, 5 or 6, schema)");
        goto done;
    }
    sc = build_schema(sub, &ncols);
    if (!sc) goto done;
    cols = cols_new(ncols);
    if (!cols) {
        PyErr_NoMemory();
        goto done;
    }
    if (select != Py_None) {
        PyObject *rol, *valid;
        Py_ssize_t ncol, k;
        if (kind != K_RECORDS || !PyTuple_Check(select) ||
            !PyArg_ParseTuple(select, "iiiiSSnn", &rd.scores, &rd.pairs, &rd.labels, &rd.boxes, &rol, &valid, &ncol, &k)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "select: a tuple, with a list root");
            goto done;
        }
        int64_t n_rows = ncol > 0 ? PyBytes_GET_SIZE(valid) / ncol : 0;
        rd.row_of_label = (const int64_t *)PyBytes_AS_STRING(rol);
        rd.n_labels = PyBytes_GET_SIZE(rol) / 8;
        int bad = ncol <= 0 || PyBytes_GET_SIZE(valid) != n_rows * ncol;
        for (int i = 0; i < 4; i++) {
            int c = i == 0 ? rd.scores : i == 1 ? rd.pairs : i == 2 ? rd.labels : rd.boxes;
            bad |= c < 1 || c >= ncols;
        }
        for (int64_t i = 0; i < rd.n_labels && !bad; i++) bad |= rd.row_of_label[i] < 0 || rd.row_of_label[i] >= n_rows;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "select: columns, labels' rows or the valid table out of shape");
            goto done;
        }
        rd.on = 1;
        rd.sel.valid = (const unsigned char *)PyBytes_AS_STRING(valid);
        rd.sel.n_rows = n_rows;
        rd.sel.ncol = ncol;
        rd.sel.k = k;
    }
    if (pos < 0 || pos > view.len) {
        PyErr_SetString(PyExc_ValueError, "pos outside the buffer");
        goto done;
    }
    Scan s = {.base = (const unsigned char *)view.buf, .p = (const unsigned char *)view.buf + pos,
              .end = (const unsigned char *)view.buf + view.len, .literal = literal, .cols = cols, .ncols = ncols,
              .rd = rd.on ? &rd : NULL, .split_from = limit < 0 && split >= 0 && split <= view.len ? split : -1};
    int r = 0, closed = 0;
    Py_BEGIN_ALLOW_THREADS
    r = add_slot(&s);
    if (!r && kind == K_OBJECT) {
        cols[0].occ.data[0] = 1;
        r = parse_object(&s, sc, 0);
        closed = 1;
    } else if (!r) {
        /* the outermost list, element by element, up to `limit` */
        Col *c = &cols[0];
        *counter(&c->occ, 0) = 1;
        int sep = 1;
        if (!resume) {
            r = expect(&s, '[');
            if (!r && closes_at_once(&s, ']')) sep = 0;
        } else {
            sep = separator(&s, ']'); /* after the element the last call stopped at */
        }
        Py_ssize_t n = 0;
        if (sep > 0) half_start(&s, sc, 1, 0);
        while (!r && sep > 0 && (limit < 0 || n < limit)) {
            r = parse_element(&s, sc, 1, 1);
            if (r) break;
            *counter(&c->items, 0) += 1;
            n++;
            if (s.half) {
                int landed = half_land(&s);
                if (landed < 0) r = landed;
                if (landed > 0) sep = 0; /* the other thread read the rest, through the list's `]` */
                if (landed) break;
            }
            ws(&s);
            if (limit >= 0 && n >= limit && s.p < s.end && *s.p == ',') break; /* resume at the comma */
            sep = separator(&s, ']');
        }
        if (!r && sep < 0) r = REFUSE;
        closed = !r && sep == 0;
    }
    half_free(&s);
    Py_END_ALLOW_THREADS
    if (r == NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    if (r) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    Py_ssize_t n_slots = (Py_ssize_t)(cols[0].occ.len / 8); /* before the counters go to Python */
    PyObject *list = PyList_New(ncols);
    if (!list) goto done;
    for (int i = 0; i < ncols; i++) {
        Col *c = &cols[i];
        PyObject *t = Py_BuildValue("(NNNNLLiiiLL)", to_block(&c->occ), to_block(&c->items),
                                    to_block(&c->nums), to_block(&c->data),
                                    (long long)(c->wmin == INT64_MAX ? -1 : c->wmin), (long long)c->wmax,
                                    c->nonint, c->escaped, c->had_null,
                                    (long long)(c->mmin == INT64_MAX ? -1 : c->mmin), (long long)c->mmax);
        if (!t) {
            Py_DECREF(list);
            goto done;
        }
        PyList_SET_ITEM(list, i, t);
    }
    PyObject *chosen = Py_None;
    if (rd.on) {
        chosen = selection_tuple(&rd.sel);
        if (!chosen) {
            Py_DECREF(list);
            goto done;
        }
    } else {
        Py_INCREF(chosen);
    }
    result = Py_BuildValue("(nOnNNOO)", (Py_ssize_t)(s.p - s.base), closed ? Py_True : Py_False,
                           n_slots, list, chosen, s.float64 ? Py_True : Py_False, s.halves ? Py_True : Py_False);
done:
    cols_free(cols, ncols);
    free_schema(sc);
    selector_free(&rd.sel);
    buf_free(&rd.rows);
    PyBuffer_Release(&view);
    return result;
}

/* parse_float(bytes) -> float or None: the scanner's number conversion on one token (tests). */
static PyObject *parse_float(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    int literal = 0;
    if (!PyArg_ParseTuple(args, "y*|p", &view, &literal)) return NULL;
    Scan s = {.base = view.buf, .p = view.buf, .end = (const unsigned char *)view.buf + view.len, .literal = literal};
    double v;
    int isint;
    int r = parse_number(&s, &v, &isint);
    PyBuffer_Release(&view);
    if (r || s.p != s.end) Py_RETURN_NONE;
    return PyFloat_FromDouble(v);
}

/* top_valid(scores, pair_row, valid, n_columns, pairs_per_image, k)
 *   -> (cells, scores, kept_per_image) as Blocks (int64, float64, int64)
 * Per image, the cells (pair * n_columns + column) of `scores` whose `valid[object of the pair]
 * [column]` is set, ordered by score (descending; NaN last), ties by cell, the first `k`
 * (k < 0: all): what a stable argsort of the negated scores of the valid cells keeps (QPIC's
 * evaluator). pair_object: int64 per pair, an index into valid's rows. */
static PyObject *top_valid(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer sb, ob, vb, pb;
    Py_ssize_t ncol, k;
    if (!PyArg_ParseTuple(args, "y*y*y*ny*n", &sb, &ob, &vb, &ncol, &pb, &k)) return NULL;
    PyObject *result = NULL;
    const double *scores = sb.buf;
    const int64_t *prow = ob.buf, *ppi = pb.buf;
    Py_ssize_t n_pairs = ob.len / 8, n_images = pb.len / 8;
    Selector sel = {vb.buf, ncol > 0 ? vb.len / ncol : 0, ncol, k, NULL, 0, {0}, {0}, {0}};
    int err = 0;
    if (ncol <= 0 || sb.len != n_pairs * ncol * 8) {
        PyErr_SetString(PyExc_ValueError, "top_valid: scores must be pairs x n_columns float64");
        goto done;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n_images; i++) {
        /* a negative count would move the next image's start back (into freed memory), a huge
         * one overflow the sum */
        if (ppi[i] < 0 || ppi[i] > n_pairs - total) {
            total = -1;
            break;
        }
        total += ppi[i];
    }
    if (total != n_pairs) {
        PyErr_SetString(PyExc_ValueError, "top_valid: pairs_per_image must be counts (>= 0) adding up to the pairs");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_pairs; i++) {
        if (prow[i] < 0 || prow[i] >= sel.n_rows) {
            PyErr_SetString(PyExc_ValueError, "top_valid: a pair's row outside valid's rows");
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    int64_t pair0 = 0;
    for (Py_ssize_t im = 0; im < n_images && !err; im++) {
        err = select_image(&sel, scores + pair0 * ncol, ppi[im], prow + pair0);
        pair0 += ppi[im];
    }
    Py_END_ALLOW_THREADS
    if (err) {
        PyErr_NoMemory();
        goto done;
    }
    result = selection_tuple(&sel);
done:
    selector_free(&sel);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&vb);
    PyBuffer_Release(&pb);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Read a JSON or Python-literal text into columns (see the module comment)."},
    {"parse_float", parse_float, METH_VARARGS, "The scanner's conversion of one number token; None if refused."},
    {"top_valid", top_valid, METH_VARARGS, "Per image, the best k valid cells of a pairs x columns score table."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_colscan",
                                    "One pass from a JSON or Python-literal text into numeric columns.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__colscan(void) {
    init_pow5();
    if (PyType_Ready(&BlockType) < 0) return NULL;
    return PyModule_Create(&module);
}
