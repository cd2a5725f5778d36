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

#define NONE UINT32_MAX

struct map_class {
    const char *orig;           /* dotted, NUL-terminated in m->text */
    const char *obf;
    uint32_t obf_len;
    uint32_t line;              /* in the file, for messages */
};

struct map_member {
    uint32_t cls;               /* index into classes */
    uint8_t method;             /* 0 field, 1 method */
    uint8_t foreign;            /* the original is qualified: another class's
                                   code inlined here (R8) */
    uint8_t one_name;           /* chain head: every line of the chain has one name */
    uint32_t obf_len;
    const char *orig;           /* simple name */
    const char *obf;
    int32_t lo, hi;             /* obfuscated line range, -1 if none */
    uint32_t next;              /* the next line with the same key, or NONE */
    uint32_t fallback;          /* chain head: its first own line, else itself */
    uint32_t seg, n_seg;        /* chain head: its runs of lines in `segs` */
};

/* From line `start` up to the next run's start, the chain's lines whose
 * range covers it: the last of them and the last not inlined from another
 * class (NONE if none), and whether their names differ. */
struct line_run {
    uint32_t start;
    uint32_t any, own;
    uint32_t names_differ;
};

struct hprof_mapping {
    char *text;
    struct map_class *classes;
    size_t n_classes, cap_classes;
    struct map_member *members;
    size_t n_members, cap_members;
    uint32_t *class_slots;      /* index + 1; 0 = empty */
    size_t class_mask;
    uint32_t *member_slots;
    size_t member_mask;
    uint64_t *member_names;     /* hash | 1 of every obfuscated member name */
    size_t member_names_mask;
    struct line_run *segs;      /* the method chains' runs, chain after chain */
    size_t n_segs, cap_segs;
};

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
static int index_all(struct hprof_mapping *m, const char *name, struct hprof_error *err)
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

static void *grow(void *array, size_t *cap, size_t n, size_t size);

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
        struct line_run *grown = grow(m->segs, &m->cap_segs, m->n_segs, sizeof *grown);
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

/* ---- Parsing -------------------------------------------------------------- */

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A name token: not empty, no blank. */
static int is_token(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (is_blank(s[i]))
            return 0;
    return 1;
}

/* Digits at *p up to `end`, into *v; advances *p.  @return 0 if none. */
static int take_number(const char **p, const char *end, int64_t *v)
{
    const char *s = *p;
    int64_t n = 0;
    if (s == end || !is_digit(*s))
        return 0;
    for (; s < end && is_digit(*s); s++) {
        n = n * 10 + (*s - '0');
        if (n > INT32_MAX)
            return 0;
    }
    *v = n;
    *p = s;
    return 1;
}

/* The last " -> " of [s, end), or NULL. */
static const char *find_arrow(const char *s, const char *end)
{
    const char *found = NULL;
    for (const char *p = s; p + 4 <= end; p++)
        if (memcmp(p, " -> ", 4) == 0)
            found = p;
    return found;
}

static void trim(const char **s, const char **end)
{
    while (*s < *end && is_blank(**s))
        (*s)++;
    while (*end > *s && is_blank((*end)[-1]))
        (*end)--;
}

struct parse {
    struct hprof_mapping *m;
    const char *name;
    size_t line;
    struct hprof_error *err;
    uint32_t cls;               /* the class member lines belong to */
};

static int malformed(struct parse *p, const char *why, const char *s, const char *end)
{
    int n = (int)(end - s > 120 ? 120 : end - s);
    return hprof_error_set(p->err, HPROF_ERR_FORMAT, "%s:%zu: malformed mapping line (%s): %.*s",
                           p->name, p->line, why, n, s);
}

static void *grow(void *array, size_t *cap, size_t n, size_t size)
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

/* `orig -> obf:` at [s, end), a line without leading blanks. */
static int class_line(struct parse *p, char *s, char *end)
{
    struct hprof_mapping *m = p->m;
    const char *line = s, *line_end = end;
    const char *arrow = find_arrow(s, end);
    if (arrow == NULL)
        return malformed(p, "no ' -> '", line, line_end);
    const char *o = s, *o_end = arrow, *b = arrow + 4, *b_end = end;
    trim(&o, &o_end);
    trim(&b, &b_end);
    if (b_end == b || b_end[-1] != ':')
        return malformed(p, "a class line ends with ':'", line, line_end);
    b_end--;
    if (!is_token(o, (size_t)(o_end - o)) || !is_token(b, (size_t)(b_end - b)))
        return malformed(p, "class names", line, line_end);
    struct map_class *grown = grow(m->classes, &m->cap_classes, m->n_classes, sizeof *grown);
    if (grown == NULL)
        return hprof_error_set(p->err, HPROF_ERR_NOMEM, "%s: out of memory", p->name);
    m->classes = grown;
    s[o_end - s] = '\0';
    s[b_end - s] = '\0';
    p->cls = (uint32_t)m->n_classes;
    m->classes[m->n_classes++] = (struct map_class){
        .orig = o, .obf = b, .obf_len = (uint32_t)(b_end - b), .line = (uint32_t)p->line };
    return HPROF_OK;
}

/* `[a:b:]type name[(args)[:c[:d]]] -> obf` at [s, end), blanks before. */
static int member_line(struct parse *p, char *s, char *end)
{
    struct hprof_mapping *m = p->m;
    const char *line = s, *line_end = end;
    if (p->cls == NONE)
        return malformed(p, "a member before any class", line, line_end);
    const char *arrow = find_arrow(s, end);
    if (arrow == NULL)
        return malformed(p, "no ' -> '", line, line_end);
    const char *q = s, *q_end = arrow, *b = arrow + 4, *b_end = end;
    trim(&q, &q_end);
    trim(&b, &b_end);
    if (!is_token(b, (size_t)(b_end - b)))
        return malformed(p, "obfuscated name", line, line_end);
    int64_t lo = -1, hi = -1, v;
    if (q < q_end && is_digit(*q)) {
        if (!take_number(&q, q_end, &lo) || q == q_end || *q++ != ':' ||
            !take_number(&q, q_end, &hi) || q == q_end || *q++ != ':' || hi < lo)
            return malformed(p, "line range", line, line_end);
    }
    const char *type_end = q;
    while (type_end < q_end && !is_blank(*type_end))
        type_end++;
    if (type_end == q || type_end == q_end)
        return malformed(p, "a member line is 'type name -> obf'", line, line_end);
    const char *n = type_end, *n_end;
    while (n < q_end && is_blank(*n))
        n++;
    const char *paren = memchr(n, '(', (size_t)(q_end - n));
    int method = paren != NULL;
    if (method) {
        const char *close = memchr(paren, ')', (size_t)(q_end - paren));
        if (close == NULL)
            return malformed(p, "no ')'", line, line_end);
        const char *t = close + 1;
        if (t < q_end) { /* :c or :c:d, the original lines */
            if (*t++ != ':' || !take_number(&t, q_end, &v) ||
                (t < q_end && (*t++ != ':' || !take_number(&t, q_end, &v))) || t != q_end)
                return malformed(p, "original line numbers", line, line_end);
        }
        n_end = paren;
    } else {
        if (lo >= 0)
            return malformed(p, "a field with line numbers", line, line_end);
        n_end = q_end;
    }
    if (!is_token(n, (size_t)(n_end - n)) || memchr(n, ':', (size_t)(n_end - n)) != NULL)
        return malformed(p, "member name", line, line_end);
    /* R8 names code inlined from another class by its qualified name. */
    const char *simple = n;
    for (const char *c = n; c < n_end; c++)
        if (*c == '.')
            simple = c + 1;
    if (simple == n_end)
        return malformed(p, "member name", line, line_end);
    struct map_member *grown = grow(m->members, &m->cap_members, m->n_members, sizeof *grown);
    if (grown == NULL)
        return hprof_error_set(p->err, HPROF_ERR_NOMEM, "%s: out of memory", p->name);
    m->members = grown;
    s[n_end - s] = '\0';
    s[b_end - s] = '\0';
    m->members[m->n_members++] = (struct map_member){
        .cls = p->cls, .method = (uint8_t)method, .foreign = simple != n,
        .obf_len = (uint32_t)(b_end - b), .orig = simple, .obf = b, .lo = (int32_t)lo,
        .hi = (int32_t)hi, .next = NONE };
    return HPROF_OK;
}

static int parse_lines(struct parse *p, char *text, size_t len)
{
    char *s = text, *end_of_text = text + len;
    int rc = HPROF_OK;
    while (rc == HPROF_OK && s < end_of_text) {
        char *e = memchr(s, '\n', (size_t)(end_of_text - s));
        if (e == NULL)
            e = end_of_text;
        char *next = e + 1;
        *e = '\0';
        if (e > s && e[-1] == '\r')
            *--e = '\0';
        p->line++;
        const char *first = s;
        while (first < e && is_blank(*first))
            first++;
        if (memchr(s, '\0', (size_t)(e - s)) != NULL)
            rc = malformed(p, "a NUL byte", s, e);
        else if (first == e || *first == '#')
            ;                   /* blank, comment or R8 metadata */
        else if (first == s)
            rc = class_line(p, s, e);
        else
            rc = member_line(p, s, e);
        s = next;
    }
    return rc;
}

/* Parse `text` (`len` bytes, room for one more), which the mapping then
 * owns (freed on failure too): names are cut out of it in place. */
static int parse_owned(char *text, size_t len, const char *name, struct hprof_mapping **out,
                       struct hprof_error *err)
{
    static const char bom[3] = { '\xEF', '\xBB', '\xBF' };
    *out = NULL;
    struct hprof_mapping *m = calloc(1, sizeof *m);
    if (m == NULL) {
        free(text);
        return hprof_error_set(err, HPROF_ERR_NOMEM, "%s: out of memory", name);
    }
    m->text = text;
    m->text[len] = '\0';
    /* Editors on Windows start a UTF-8 file with a byte order mark. */
    size_t skip = len >= sizeof bom && memcmp(text, bom, sizeof bom) == 0 ? sizeof bom : 0;
    struct parse p = { .m = m, .name = name, .err = err, .cls = NONE };
    int rc = parse_lines(&p, m->text + skip, len - skip);
    if (rc == HPROF_OK)
        rc = index_all(m, name, err);
    if (rc != HPROF_OK) {
        mapping_free(m);
        return rc;
    }
    *out = m;
    return HPROF_OK;
}

int mapping_parse(const char *text, size_t len, const char *name, struct hprof_mapping **out,
                  struct hprof_error *err)
{
    *out = NULL;
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "%s: out of memory", name);
    if (len > 0)
        memcpy(copy, text, len);
    return parse_owned(copy, len, name, out, err);
}

static int too_large(const char *path, size_t max_bytes, struct hprof_error *err)
{
    return hprof_error_set(err, HPROF_ERR_FORMAT,
                           "%s: a mapping file is at most %zu bytes; this one is larger", path,
                           max_bytes);
}

int mapping_load_at_most(const char *path, size_t max_bytes, struct hprof_mapping **out,
                         struct hprof_error *err)
{
    *out = NULL;
    int rc = HPROF_OK;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return hprof_error_set(err, HPROF_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        if ((uint64_t)st.st_size > max_bytes) {
            close(fd);
            return too_large(path, max_bytes, err);
        }
        cap = (size_t)st.st_size + 1;   /* +1: the read that finds the end */
    }
    for (;;) {
        if (len == cap) {
            size_t c = cap ? 2 * cap : 65536;
            if (c > max_bytes + 1)
                c = max_bytes + 1;
            char *grown = realloc(buf, c);
            if (grown == NULL) {
                rc = hprof_error_set(err, HPROF_ERR_NOMEM, "%s: out of memory", path);
                goto out;
            }
            buf = grown;
            cap = c;
        } else if (buf == NULL && (buf = malloc(cap)) == NULL) {
            rc = hprof_error_set(err, HPROF_ERR_NOMEM, "%s: out of memory", path);
            goto out;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = hprof_error_set(err, HPROF_ERR_IO, "%s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        /* A text file has no NUL: say so at once rather than read on
         * (/dev/zero, a dump given by mistake). */
        const char *nul = memchr(buf + len, '\0', (size_t)n);
        if (nul != NULL) {
            rc = hprof_error_set(err, HPROF_ERR_FORMAT,
                                 "%s: offset %zu: a NUL byte: not a text mapping file", path,
                                 (size_t)(nul - buf));
            goto out;
        }
        len += (size_t)n;
        if (len > max_bytes) {
            rc = too_large(path, max_bytes, err);
            goto out;
        }
    }
    if (len == cap) { /* room for the NUL parse_owned() puts at the end */
        char *grown = realloc(buf, len + 1);
        if (grown == NULL) {
            rc = hprof_error_set(err, HPROF_ERR_NOMEM, "%s: out of memory", path);
            goto out;
        }
        buf = grown;
    }
    close(fd);
    return parse_owned(buf, len, path, out, err);
out:
    free(buf);
    close(fd);
    return rc;
}

int mapping_load(const char *path, struct hprof_mapping **out, struct hprof_error *err)
{
    return mapping_load_at_most(path, MAPPING_MAX_BYTES, out, err);
}

void mapping_free(struct hprof_mapping *m)
{
    if (m == NULL)
        return;
    free(m->text);
    free(m->classes);
    free(m->members);
    free(m->class_slots);
    free(m->member_slots);
    free(m->member_names);
    free(m->segs);
    free(m);
}

size_t mapping_n_classes(const struct hprof_mapping *m)
{
    return m->n_classes;
}

size_t mapping_n_members(const struct hprof_mapping *m)
{
    return m->n_members;
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

int hprof_mapping_load(const char *path, struct hprof_mapping **out, struct hprof_error *err)
{
    return mapping_load(path, out, err);
}

void hprof_mapping_free(struct hprof_mapping *m)
{
    mapping_free(m);
}
