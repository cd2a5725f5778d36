/*
 * mapping.c - ProGuard/R8 mapping files: parsed once into tables that
 * answer "what was this obfuscated class, field or method called?".
 *
 * The file's text is copied into one buffer and the names are cut out of
 * it in place (a NUL written after each), so a mapping costs its text plus
 * a small record per class and member line: R8 mappings of large apps run
 * to 100+ MB, and a copy per name would double that.  Classes are found by
 * a hash of their obfuscated name in which '/' counts as '.', so HotSpot's
 * `a/b/C` and Android's `a.b.C` hit the same entry without building either
 * form.  Members are found by (class, field or method, obfuscated name);
 * the member lines that share a key (overloads renamed alike, R8's lines
 * for inlined code) are chained in file order for mapping_method()'s rule;
 * what that rule answers is worked out once per chain when the file is
 * read (its one name, its fallback, and for each run of obfuscated lines
 * the line ranges that cover it), so that a stack frame costs a hash
 * probe and a binary search however long the chain.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hprof_private.h"
#include "mapping.h"
#include "mapping_private.h"

_Thread_local uint64_t mapping_lookup_steps;

/* ---- Hashing: '/' and '.' are the same character in class names -------- */

static inline unsigned char dot(unsigned char c)
{
    return c == '/' ? '.' : c;
}

static uint64_t hash_name(const char *s, size_t len, uint64_t h)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ dot((unsigned char)s[i])) * 0x100000001b3ull;
    return h;
}

static int same_name(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return 0;
    for (size_t i = 0; i < alen; i++)
        if (dot((unsigned char)a[i]) != dot((unsigned char)b[i]))
            return 0;
    return 1;
}

static uint64_t member_hash(uint32_t cls, int method, const char *obf, size_t len)
{
    return hash_name(obf, len, (0xcbf29ce484222325ull ^ cls) * 0x100000001b3ull + (uint64_t)method);
}

static size_t slot_of(uint64_t h, size_t mask)
{
    return (size_t)(h ^ h >> 29) & mask;
}

static uint32_t find_class(const struct hprof_mapping *m, const char *obf, size_t len)
{
    if (m->class_slots == NULL)
        return NONE;
    for (size_t s = slot_of(hash_name(obf, len, 0xcbf29ce484222325ull), m->class_mask);
         m->class_slots[s] != 0; s = (s + 1) & m->class_mask) {
        mapping_lookup_steps++;
        const struct map_class *c = &m->classes[m->class_slots[s] - 1];
        if (same_name(c->obf, c->obf_len, obf, len))
            return m->class_slots[s] - 1;
    }
    return NONE;
}

/* The first member line of (cls, method, obf), or NONE. */
static uint32_t find_member(const struct hprof_mapping *m, uint32_t cls, int method, const char *obf,
                            size_t len)
{
    if (m->member_slots == NULL || cls == NONE)
        return NONE;
    for (size_t s = slot_of(member_hash(cls, method, obf, len), m->member_mask);
         m->member_slots[s] != 0; s = (s + 1) & m->member_mask) {
        mapping_lookup_steps++;
        const struct map_member *x = &m->members[m->member_slots[s] - 1];
        if (x->cls == cls && x->method == method && x->obf_len == len &&
            memcmp(x->obf, obf, len) == 0)
            return m->member_slots[s] - 1;
    }
    return NONE;
}

static size_t table_size(size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    return cap;
}

static int summarize_chains(struct hprof_mapping *m, const char *name, struct hprof_error *err);

/* Hash tables over the parsed lines; member chains in file order. */
int mapping_index_all(struct hprof_mapping *m, const char *name, struct hprof_error *err)
{
    size_t ccap = table_size(m->n_classes), mcap = table_size(m->n_members);
    m->class_slots = calloc(ccap, sizeof *m->class_slots);
    m->member_slots = calloc(mcap, sizeof *m->member_slots);
    if (m->class_slots == NULL || m->member_slots == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "%s: out of memory", name);
    m->class_mask = ccap - 1;
    m->member_mask = mcap - 1;
    m->member_names = calloc(mcap, sizeof *m->member_names);
    if (m->member_names == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "%s: out of memory", name);
    m->member_names_mask = mcap - 1;
    for (size_t i = 0; i < m->n_members; i++) {
        uint64_t h = hash_name(m->members[i].obf, m->members[i].obf_len, 0) | 1;
        size_t s = slot_of(h, m->member_names_mask);
        while (m->member_names[s] != 0 && m->member_names[s] != h)
            s = (s + 1) & m->member_names_mask;
        m->member_names[s] = h;
    }
    for (size_t i = 0; i < m->n_classes; i++) {
        const struct map_class *c = &m->classes[i];
        uint32_t dup = find_class(m, c->obf, c->obf_len);
        if (dup != NONE)
            return hprof_error_set(err, HPROF_ERR_FORMAT,
                                   "%s:%" PRIu32 ": class %s is also the obfuscated name of "
                                   "line %" PRIu32,
                                   name, c->line, c->obf, m->classes[dup].line);
        size_t s = slot_of(hash_name(c->obf, c->obf_len, 0xcbf29ce484222325ull), m->class_mask);
        while (m->class_slots[s] != 0)
            s = (s + 1) & m->class_mask;
        m->class_slots[s] = (uint32_t)i + 1;
    }
    /* Backwards, each line pushed in front of its chain: chains end up in
     * file order, their head in the table. */
    for (size_t i = m->n_members; i-- > 0;) {
        struct map_member *x = &m->members[i];
        size_t s = slot_of(member_hash(x->cls, x->method, x->obf, x->obf_len), m->member_mask);
        for (; m->member_slots[s] != 0; s = (s + 1) & m->member_mask) {
            const struct map_member *y = &m->members[m->member_slots[s] - 1];
            if (y->cls == x->cls && y->method == x->method && y->obf_len == x->obf_len &&
                memcmp(y->obf, x->obf, x->obf_len) == 0)
                break;
        }
        x->next = m->member_slots[s] != 0 ? m->member_slots[s] - 1 : NONE;
        m->member_slots[s] = (uint32_t)i + 1;
    }
    return summarize_chains(m, name, err);
}

void *mapping_grow(void *array, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return array;
    size_t c = *cap ? 2 * *cap : 256;
    if (c > UINT32_MAX - 1)
        return NULL;
    void *grown = realloc(array, c * size);
    if (grown != NULL)
        *cap = c;
    return grown;
}

/* ---- Method chains: mapping_method()'s answers, worked out once ----------- */

/* A line range of a chain's line opens (at its first line) or closes (past
 * its last). */
struct line_event {
    uint32_t at;
    uint32_t pos;               /* in the chain */
    uint32_t opens;
};

struct named_pos {
    const char *name;
    uint32_t pos;
};

/* Scratch arrays for one chain at a time, grown to the longest. */
struct chain_work {
    uint32_t *lines;            /* the chain's members in file order */
    uint32_t *name_of;          /* chain position -> its name's number */
    uint32_t *name_count;       /* name number -> covering lines of that name */
    uint8_t *covering;          /* chain position -> its range covers the line */
    uint32_t *any_heap, *own_heap; /* covering positions (and stale ones), max first */
    struct line_event *events;
    struct named_pos *names;
    size_t cap;
};

static void work_free(struct chain_work *w)
{
    free(w->lines);
    free(w->name_of);
    free(w->name_count);
    free(w->covering);
    free(w->any_heap);
    free(w->own_heap);
    free(w->events);
    free(w->names);
}

static int work_reserve(struct chain_work *w, size_t n)
{
    if (n <= w->cap)
        return HPROF_OK;
    size_t cap = n > 2 * w->cap ? n : 2 * w->cap;
    work_free(w);
    memset(w, 0, sizeof *w);
    w->lines = malloc(cap * sizeof *w->lines);
    w->name_of = malloc(cap * sizeof *w->name_of);
    w->name_count = malloc(cap * sizeof *w->name_count);
    w->covering = malloc(cap);
    w->any_heap = malloc(cap * sizeof *w->any_heap);
    w->own_heap = malloc(cap * sizeof *w->own_heap);
    w->events = malloc(2 * cap * sizeof *w->events);
    w->names = malloc(cap * sizeof *w->names);
    if (!w->lines || !w->name_of || !w->name_count || !w->covering || !w->any_heap ||
        !w->own_heap || !w->events || !w->names)
        return HPROF_ERR_NOMEM;
    w->cap = cap;
    return HPROF_OK;
}

static void heap_push(uint32_t *h, size_t *n, uint32_t v)
{
    size_t i = (*n)++;
    for (; i > 0 && h[(i - 1) / 2] < v; i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = v;
}

static void heap_pop(uint32_t *h, size_t *n)
{
    uint32_t v = h[--*n];
    size_t i = 0;
    for (size_t c = 1; c < *n; c = 2 * i + 1) {
        if (c + 1 < *n && h[c + 1] > h[c])
            c++;
        if (h[c] <= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = v;
}

/* The greatest position still covering, or NONE; stale ones dropped. */
static uint32_t heap_top(uint32_t *h, size_t *n, const uint8_t *covering)
{
    while (*n > 0 && !covering[h[0]])
        heap_pop(h, n);
    return *n > 0 ? h[0] : NONE;
}

static int by_event_line(const void *a, const void *b)
{
    const struct line_event *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

static int by_name(const void *a, const void *b)
{
    const struct named_pos *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* The runs of chain `w->lines[0..n)`: a sweep over the ends of its line
 * ranges, keeping which lines cover the current one. */
static int chain_runs(struct hprof_mapping *m, struct chain_work *w, size_t n)
{
    struct map_member *x = m->members, *head = &x[w->lines[0]];
    size_t n_events = 0, n_any = 0, n_own = 0, names = 0, distinct = 0;
    for (size_t i = 0; i < n; i++) {
        w->names[i] = (struct named_pos){ x[w->lines[i]].orig, (uint32_t)i };
        w->covering[i] = 0;
        const struct map_member *l = &x[w->lines[i]];
        if (l->lo < 0)
            continue;
        w->events[n_events++] = (struct line_event){ (uint32_t)l->lo, (uint32_t)i, 1 };
        w->events[n_events++] = (struct line_event){ (uint32_t)l->hi + 1, (uint32_t)i, 0 };
    }
    qsort(w->names, n, sizeof *w->names, by_name);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(w->names[i].name, w->names[i - 1].name) != 0)
            names++;
        w->name_of[w->names[i].pos] = (uint32_t)names;
        w->name_count[i] = 0;
    }
    qsort(w->events, n_events, sizeof *w->events, by_event_line);
    head->seg = (uint32_t)m->n_segs;
    for (size_t e = 0; e < n_events;) {
        uint32_t at = w->events[e].at;
        for (; e < n_events && w->events[e].at == at; e++) {
            uint32_t pos = w->events[e].pos, name = w->name_of[pos];
            w->covering[pos] = (uint8_t)w->events[e].opens;
            if (w->events[e].opens) {
                heap_push(w->any_heap, &n_any, pos);
                if (!x[w->lines[pos]].foreign)
                    heap_push(w->own_heap, &n_own, pos);
                distinct += w->name_count[name]++ == 0;
            } else {
                distinct -= --w->name_count[name] == 0;
            }
        }
        uint32_t any = heap_top(w->any_heap, &n_any, w->covering);
        uint32_t own = heap_top(w->own_heap, &n_own, w->covering);
        struct line_run run = { at, any == NONE ? NONE : w->lines[any],
                                own == NONE ? NONE : w->lines[own], distinct > 1 };
        const struct line_run *last = m->n_segs > head->seg ? &m->segs[m->n_segs - 1] : NULL;
        if (last != NULL && last->any == run.any && last->own == run.own &&
            last->names_differ == run.names_differ)
            continue;
        struct line_run *grown = mapping_grow(m->segs, &m->cap_segs, m->n_segs, sizeof *grown);
        if (grown == NULL)
            return HPROF_ERR_NOMEM;
        m->segs = grown;
        m->segs[m->n_segs++] = run;
    }
    head->n_seg = (uint32_t)(m->n_segs - head->seg);
    return HPROF_OK;
}

/* For every method chain: whether its lines share one name, its fallback
 * (the first line not inlined from another class), and its runs. */
static int summarize_chains(struct hprof_mapping *m, const char *name, struct hprof_error *err)
{
    struct chain_work w = { 0 };
    int rc = HPROF_OK;
    for (size_t s = 0; rc == HPROF_OK && s <= m->member_mask; s++) {
        if (m->member_slots[s] == 0)
            continue;
        uint32_t h = m->member_slots[s] - 1;
        struct map_member *head = &m->members[h];
        size_t n = 0;
        head->one_name = 1;
        head->fallback = NONE;
        for (uint32_t i = h; i != NONE; i = m->members[i].next, n++) {
            head->one_name &= strcmp(m->members[i].orig, head->orig) == 0;
            if (head->fallback == NONE && !m->members[i].foreign)
                head->fallback = i;
        }
        if (head->fallback == NONE)
            head->fallback = h;
        if (!head->method || head->one_name)
            continue;
        rc = work_reserve(&w, n);
        n = 0;
        for (uint32_t i = h; rc == HPROF_OK && i != NONE; i = m->members[i].next)
            w.lines[n++] = i;
        if (rc == HPROF_OK)
            rc = chain_runs(m, &w, n);
    }
    work_free(&w);
    return rc == HPROF_OK ? HPROF_OK : hprof_error_set(err, HPROF_ERR_NOMEM, "%s: out of memory", name);
}

/* ---- Lookups ------------------------------------------------------------ */

int mapping_maybe_member(const struct hprof_mapping *m, const char *name, size_t len)
{
    if (m->member_names == NULL)
        return 0;
    uint64_t h = hash_name(name, len, 0) | 1;
    for (size_t s = slot_of(h, m->member_names_mask); m->member_names[s] != 0;
         s = (s + 1) & m->member_names_mask)
        if (m->member_names[s] == h)
            return 1;
    return 0;
}

const char *mapping_class(const struct hprof_mapping *m, const char *obf, size_t len)
{
    uint32_t i = find_class(m, obf, len);
    return i == NONE ? NULL : m->classes[i].orig;
}

/* Append `len` bytes of `s` to out[*at], within `cap`, '.' as `sep`. */
static void put(char *out, size_t cap, size_t *at, const char *s, size_t len, char sep)
{
    for (size_t i = 0; i < len; i++, (*at)++)
        if (*at < cap)
            out[*at] = s[i] == '.' ? sep : s[i];
}

size_t mapping_class_name(const struct hprof_mapping *m, const char *name, size_t len,
                          char separator, char *out, size_t cap)
{
    size_t dims = 0, at = 0;
    const char *core = name;
    size_t core_len = len;
    int jvm_array = len > 0 && name[0] == '[';
    if (jvm_array) { /* [[La/b/C; */
        while (dims < len && name[dims] == '[')
            dims++;
        if (len - dims < 3 || name[dims] != 'L' || name[len - 1] != ';')
            return 0;   /* a primitive array: [I */
        core = name + dims + 1;
        core_len = len - dims - 2;
    } else {            /* a.b.C[][] */
        while (core_len >= 2 && name[core_len - 2] == '[' && name[core_len - 1] == ']') {
            core_len -= 2;
            dims++;
        }
    }
    const char *orig = mapping_class(m, core, core_len);
    if (orig == NULL)
        return 0;
    /* The name's own form where it shows one (a JVM array is HotSpot's
     * form), else the dump's: `a` alone may be either. */
    char sep = separator;
    if (jvm_array || memchr(core, '/', core_len) != NULL)
        sep = '/';
    else if (memchr(core, '.', core_len) != NULL)
        sep = '.';
    if (jvm_array) {
        put(out, cap, &at, name, dims + 1, sep);
        put(out, cap, &at, orig, strlen(orig), sep);
        put(out, cap, &at, ";", 1, sep);
    } else {
        put(out, cap, &at, orig, strlen(orig), sep);
        for (size_t i = 0; i < dims; i++)
            put(out, cap, &at, "[]", 2, sep);
    }
    if (at < cap)
        out[at] = '\0';
    return at;
}

const char *mapping_field(const struct hprof_mapping *m, const char *obf_class, size_t class_len,
                          const char *obf_field, size_t field_len)
{
    uint32_t i = find_member(m, find_class(m, obf_class, class_len), 0, obf_field, field_len);
    uint32_t first = i;
    for (; i != NONE; i = m->members[i].next)
        if (!m->members[i].foreign)
            return m->members[i].orig;
    return first == NONE ? NULL : m->members[first].orig;
}

const char *mapping_method(const struct hprof_mapping *m, const char *obf_class, size_t class_len,
                           const char *obf_method, size_t method_len, int32_t line,
                           int *ambiguous)
{
    uint32_t head = find_member(m, find_class(m, obf_class, class_len), 1, obf_method, method_len);
    int dummy;
    if (ambiguous == NULL)
        ambiguous = &dummy;
    *ambiguous = 0;
    if (head == NONE)
        return NULL;
    const struct map_member *x = m->members;
    if (x[head].one_name)                                  /* rule 1 */
        return x[head].orig;
    if (line > 0 && x[head].n_seg > 0) {                   /* rule 2 */
        const struct line_run *runs = m->segs + x[head].seg;
        size_t lo = 0, hi = x[head].n_seg;                 /* the last run starting <= line */
        while (lo < hi) {
            mapping_lookup_steps++;
            size_t mid = lo + (hi - lo) / 2;
            if (runs[mid].start <= (uint32_t)line)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && runs[lo - 1].any != NONE) {
            *ambiguous = (int)runs[lo - 1].names_differ;
            return x[runs[lo - 1].own != NONE ? runs[lo - 1].own : runs[lo - 1].any].orig;
        }
    }
    *ambiguous = 1;                                        /* rule 3 */
    return x[x[head].fallback].orig;
}
