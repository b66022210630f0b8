/* hoibench._pcg64: numpy's Generator(PCG64(entropy)).permutation(n), in C.
 *
 * Why: the runner orders every multiple-choice question's choices on its event loop. The
 * pure-Python reference (hoibench._random._pcg64_permutation_py) spends ~25-30 us a call on
 * 128-bit arithmetic in Python ints; this does the same in ~1 us. It must give exactly that
 * function's numbers, which are numpy's (tests/test_random_permutation.py checks both).
 *
 * The steps, as numpy does them (numpy/random/bit_generator.pyx, pcg64.h, _generator.pyx):
 * SeedSequence(entropy).generate_state(4, uint64) hashes the entropy's 32-bit words into a pool
 * of four, mixes it and hashes eight words out; pcg_setseq_128_srandom_r seeds the 128-bit LCG;
 * Generator.shuffle runs Fisher-Yates from the end, each index drawn by masked rejection on
 * 32-bit draws, where one 64-bit XSL-RR output gives its low half and, on the next draw, its
 * high half.
 *
 * permutation(words, n): words is a bytes object of the entropy's 32-bit words, little-endian,
 * least significant first (at least one); n an int in [0, 2**31-1]. Returns a tuple of ints.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#ifndef __SIZEOF_INT128__
/* the build is optional (setup.py): failing here leaves the pure-Python path in use */
#error "hoibench._pcg64 needs unsigned __int128"
#endif

typedef unsigned __int128 u128;

/* SeedSequence's hash constants */
#define INIT_A 0x43b0d7e5u
#define MULT_A 0x931e8875u
#define INIT_B 0x8b51f9ddu
#define MULT_B 0x58f38dedu
#define MIX_MULT_L 0xca01f9ddu
#define MIX_MULT_R 0x4973f715u
#define POOL 4

/* PCG64's 128-bit multiplier */
#define PCG_MULT (((u128)2549297995355413924ULL << 64) | 4865540595714422341ULL)

/* all arithmetic below is on unsigned types: wrapping mod 2^32 / 2^128 is numpy's */
static uint32_t hashmix(uint32_t v, uint32_t *h) {
    v ^= *h;
    *h *= MULT_A;
    v *= *h;
    return v ^ (v >> 16);
}

static uint32_t mix(uint32_t x, uint32_t y) {
    uint32_t r = MIX_MULT_L * x - MIX_MULT_R * y;
    return r ^ (r >> 16);
}

/* word i of the entropy, read byte by byte so the host's byte order does not matter */
static uint32_t word_at(const unsigned char *p, Py_ssize_t i) {
    p += 4 * i;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* SeedSequence(words).generate_state(4, uint64) */
static void seed_state(const unsigned char *p, Py_ssize_t nwords, uint64_t out[4]) {
    uint32_t pool[POOL], h = INIT_A, o[2 * POOL];
    for (int i = 0; i < POOL; i++) pool[i] = hashmix(i < nwords ? word_at(p, i) : 0, &h);
    for (int src = 0; src < POOL; src++)
        for (int dst = 0; dst < POOL; dst++)
            if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], &h));
    for (Py_ssize_t i = POOL; i < nwords; i++) /* words beyond the pool: mixed into each slot */
        for (int dst = 0; dst < POOL; dst++) pool[dst] = mix(pool[dst], hashmix(word_at(p, i), &h));
    h = INIT_B;
    for (int i = 0; i < 2 * POOL; i++) {
        uint32_t v = pool[i % POOL] ^ h;
        h *= MULT_B;
        v *= h;
        o[i] = v ^ (v >> 16);
    }
    for (int k = 0; k < 4; k++) out[k] = (uint64_t)o[2 * k] | (uint64_t)o[2 * k + 1] << 32;
}

static PyObject *permutation(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "permutation() takes exactly 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *words = args[0];
    if (!PyBytes_Check(words)) {
        PyErr_Format(PyExc_TypeError, "words must be bytes, not %.100s", Py_TYPE(words)->tp_name);
        return NULL;
    }
    Py_ssize_t len = PyBytes_GET_SIZE(words);
    if (len == 0 || len % 4 != 0) {
        PyErr_Format(PyExc_ValueError,
                     "words must hold one or more 32-bit words (a length that is a positive "
                     "multiple of 4), got %zd bytes", len);
        return NULL;
    }
    if (!PyIndex_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "n must be an int, not %.100s", Py_TYPE(args[1])->tp_name);
        return NULL;
    }
    PyObject *index = PyNumber_Index(args[1]);
    if (index == NULL) return NULL;
    int overflow;
    long long nl = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (nl == -1 && PyErr_Occurred()) return NULL;
    if (overflow > 0 || nl > INT32_MAX) { /* the order is kept as uint32 (nl is -1 on overflow) */
        PyErr_SetString(PyExc_ValueError, "n must be <= 2**31-1");
        return NULL;
    }
    if (overflow < 0 || nl < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be >= 0");
        return NULL;
    }
    uint32_t n = (uint32_t)nl;

    uint64_t s[4];
    seed_state((const unsigned char *)PyBytes_AS_STRING(words), len / 4, s);
    /* pcg_setseq_128_srandom_r: state 0, one step, add the seed, one step */
    u128 inc = ((((u128)s[2] << 64) | s[3]) << 1) | 1;
    u128 state = ((((u128)s[0] << 64) | s[1]) + inc) * PCG_MULT + inc;

    /* questions have a few choices: no allocation for those */
    uint32_t small[64], *order = small;
    if (n > 64) {
        order = PyMem_Malloc((size_t)n * sizeof *order);
        if (order == NULL) return PyErr_NoMemory();
    }
    for (uint32_t i = 0; i < n; i++) order[i] = i;

    uint32_t spare = 0;
    int has_spare = 0;
    for (uint32_t i = n > 0 ? n - 1 : 0; i > 0; i--) {
        uint32_t mask = i, x, j;
        mask |= mask >> 1;
        mask |= mask >> 2;
        mask |= mask >> 4;
        mask |= mask >> 8;
        mask |= mask >> 16;
        do {
            if (has_spare) {
                x = spare;
                has_spare = 0;
            } else {
                state = state * PCG_MULT + inc;
                uint64_t w = (uint64_t)(state >> 64) ^ (uint64_t)state;
                unsigned rot = (unsigned)(state >> 122);
                uint64_t out = (w >> rot) | (w << ((64 - rot) & 63));
                x = (uint32_t)out;
                spare = (uint32_t)(out >> 32);
                has_spare = 1;
            }
            j = x & mask;
        } while (j > i);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }

    PyObject *result = PyTuple_New((Py_ssize_t)n);
    for (uint32_t i = 0; result != NULL && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLong(order[i]);
        if (v == NULL) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, (Py_ssize_t)i, v);
    }
    if (order != small) PyMem_Free(order);
    return result;
}

static PyMethodDef methods[] = {
    {"permutation", (PyCFunction)(void (*)(void))permutation, METH_FASTCALL,
     "permutation(words, n): numpy's Generator(PCG64(entropy)).permutation(n) as a tuple, for the "
     "entropy's 32-bit words (bytes, little-endian, least significant first)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pcg64",
                                    "numpy's seeded PCG64 permutation, without numpy.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pcg64(void) { return PyModule_Create(&module); }
