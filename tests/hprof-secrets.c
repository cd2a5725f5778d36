/*
 * hprof-secrets MANIFEST DUMP - search a heap dump (plain or gzip) for every
 * secret a planted-secret corpus names (tests/java/SecretPlanter.java,
 * hprof-synth --secrets), and say per kind whether any is left and where.
 *
 * MANIFEST lines are "EXPECT KIND TYPE ARGS":
 *   text TEXT      UTF-8; searched as Latin-1 (when it fits), UTF-8,
 *                  UTF-16 big-endian and UTF-16 little-endian
 *   i32 HEX        4 big-endian bytes anywhere in the file
 *   i64 HEX        8 big-endian bytes anywhere in the file
 *   field CLASS H  an instance of CLASS (dots or slashes) whose field bytes
 *                  hold the bytes H: values too short to search a whole
 *                  file for (a char, a short, a byte) and hash caches
 * A kind may have several lines; it is found when any of them is.
 *
 * Prints one line per kind, in the manifest's order:
 *   EXPECT KIND found HOW at 0xOFFSET in WHERE
 *   EXPECT KIND absent
 * where WHERE is the record holding the bytes (an instance of a class, a
 * class dump's statics, an array's contents, a STRING record...).  Exit 0
 * when the dump was searched, 1 on a bad dump, 2 on a bad manifest.
 *
 * A test helper (not installed): it reads the whole dump into memory.
 */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hprof.h"
#include "hprof_private.h"

enum { MAX_ENTRIES = 512, MAX_PATTERN = 512, MAX_CLASS_IDS = 4 };
enum entry_type { T_TEXT, T_I32, T_I64, T_FIELD };

struct entry {
    char expect[8];
    char kind[64];
    enum entry_type type;
    char class_name[128];            /* T_FIELD, dotted */
    uint64_t class_ids[MAX_CLASS_IDS];
    int n_class_ids;
    /* The byte forms to look for, and what each is called. */
    uint8_t pattern[4][MAX_PATTERN];
    size_t pattern_len[4];
    const char *pattern_name[4];
    int n_patterns;
    /* The first hit. */
    int found;
    const char *how;
    uint64_t offset;
};

/* A record of the dump, to say where a hit is. */
struct span {
    uint64_t offset;
    char what;          /* S string, L load class, R other record, H segment, C class dump,
                           I instance, O object array, P primitive array, r root, h heap info */
    uint8_t type;       /* of a primitive array */
    uint64_t class_id;
};

struct search {
    struct hprof_visitor base;
    struct entry *entries;
    int n_entries;
    /* The dump is read twice: its names and classes first, so that an
     * instance's class is known by name wherever its STRING comes (a dump
     * may write its names after the heap), then the rest. */
    int names_known;
    struct idmap string_index;   /* STRING id -> index + 1 in names */
    struct idmap class_names;    /* class id -> STRING id */
    uint64_t *classes;           /* the class ids LOAD_CLASS names, in order */
    size_t n_classes, cap_classes;
    char **names;
    size_t n_names, cap_names;
    struct span *spans;
    size_t n_spans, cap_spans;
    int rc;
};

static int hex_bytes(const char *hex, uint8_t *out, size_t max, size_t *len)
{
    size_t n = strlen(hex);
    if (n % 2 != 0 || n / 2 > max)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    *len = n / 2;
    return 0;
}

static void add_pattern(struct entry *e, const char *name, const uint8_t *bytes, size_t len)
{
    for (int i = 0; i < e->n_patterns; i++)
        if (e->pattern_len[i] == len && memcmp(e->pattern[i], bytes, len) == 0)
            return; /* Latin-1 and UTF-8 agree on ASCII */
    memcpy(e->pattern[e->n_patterns], bytes, len);
    e->pattern_len[e->n_patterns] = len;
    e->pattern_name[e->n_patterns++] = name;
}

/* A text's four byte forms (BMP characters only). */
static int text_patterns(struct entry *e, const char *text)
{
    uint16_t units[MAX_PATTERN / 2];
    size_t n = 0;
    for (const uint8_t *p = (const uint8_t *)text; *p; n++) {
        if (n == MAX_PATTERN / 2)
            return -1;
        if (*p < 0x80) {
            units[n] = *p++;
        } else if ((p[0] & 0xE0) == 0xC0 && p[1]) {
            units[n] = (uint16_t)((p[0] & 0x1F) << 6 | (p[1] & 0x3F));
            p += 2;
        } else if ((p[0] & 0xF0) == 0xE0 && p[1] && p[2]) {
            units[n] = (uint16_t)((p[0] & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F));
            p += 3;
        } else {
            return -1;
        }
    }
    uint8_t latin1[MAX_PATTERN], be[MAX_PATTERN], le[MAX_PATTERN];
    int fits = 1;
    for (size_t i = 0; i < n; i++) {
        fits &= units[i] <= 0xFF;
        latin1[i] = (uint8_t)units[i];
        be[2 * i] = (uint8_t)(units[i] >> 8), be[2 * i + 1] = (uint8_t)units[i];
        le[2 * i] = (uint8_t)units[i], le[2 * i + 1] = (uint8_t)(units[i] >> 8);
    }
    if (strlen(text) > MAX_PATTERN)
        return -1;
    if (fits)
        add_pattern(e, "Latin-1", latin1, n);
    add_pattern(e, "UTF-8", (const uint8_t *)text, strlen(text));
    add_pattern(e, "UTF-16BE", be, 2 * n);
    add_pattern(e, "UTF-16LE", le, 2 * n);
    return 0;
}

static void dotted(char *name)
{
    for (char *p = name; *p; p++)
        if (*p == '/')
            *p = '.';
}

static int parse_line(struct entry *e, char *line)
{
    char *save = NULL;
    char *expect = strtok_r(line, " ", &save), *kind = strtok_r(NULL, " ", &save);
    char *type = strtok_r(NULL, " ", &save), *rest = strtok_r(NULL, "\n", &save);
    if (expect == NULL || kind == NULL || type == NULL || rest == NULL ||
        strlen(expect) >= sizeof e->expect || strlen(kind) >= sizeof e->kind)
        return -1;
    memset(e, 0, sizeof *e);
    strcpy(e->expect, expect);
    strcpy(e->kind, kind);
    size_t len;
    uint8_t bytes[MAX_PATTERN];
    if (strcmp(type, "text") == 0) {
        e->type = T_TEXT;
        return text_patterns(e, rest);
    }
    if (strcmp(type, "i32") == 0 || strcmp(type, "i64") == 0) {
        e->type = type[1] == '3' ? T_I32 : T_I64;
        if (hex_bytes(rest, bytes, MAX_PATTERN, &len) != 0 || len != (e->type == T_I32 ? 4u : 8u))
            return -1;
        add_pattern(e, e->type == T_I32 ? "i32" : "i64", bytes, len);
        return 0;
    }
    if (strcmp(type, "field") == 0) {
        char *cls = strtok_r(rest, " ", &save), *hex = strtok_r(NULL, " \n", &save);
        if (cls == NULL || hex == NULL || strlen(cls) >= sizeof e->class_name ||
            hex_bytes(hex, bytes, MAX_PATTERN, &len) != 0 || len == 0)
            return -1;
        e->type = T_FIELD;
        strcpy(e->class_name, cls);
        dotted(e->class_name);
        add_pattern(e, "field", bytes, len);
        return 0;
    }
    return -1;
}

static int add_span(struct search *s, char what, uint64_t offset, uint64_t class_id, uint8_t type)
{
    if (s->n_spans == s->cap_spans) {
        size_t cap = s->cap_spans ? 2 * s->cap_spans : 4096;
        struct span *p = realloc(s->spans, cap * sizeof *p);
        if (p == NULL)
            return HPROF_ERR_NOMEM;
        s->spans = p;
        s->cap_spans = cap;
    }
    s->spans[s->n_spans++] = (struct span){ offset, what, type, class_id };
    return HPROF_OK;
}

static const char *class_name(const struct search *s, uint64_t class_id)
{
    uint64_t name_id, index;
    if (!idmap_get(&s->class_names, class_id, &name_id) ||
        !idmap_get(&s->string_index, name_id, &index))
        return "?";
    return s->names[index - 1];
}

static int on_string(struct hprof_visitor *v, const struct hprof_string *str)
{
    struct search *s = (struct search *)v;
    if (s->names_known)
        return add_span(s, 'S', str->offset, 0, 0);
    if (s->n_names == s->cap_names) {
        size_t cap = s->cap_names ? 2 * s->cap_names : 4096;
        char **p = realloc(s->names, cap * sizeof *p);
        if (p == NULL)
            return HPROF_ERR_NOMEM;
        s->names = p;
        s->cap_names = cap;
    }
    char *name = malloc(str->length + 1u);
    if (name == NULL)
        return HPROF_ERR_NOMEM;
    memcpy(name, str->utf8, str->length);
    name[str->length] = '\0';
    dotted(name);
    s->names[s->n_names++] = name;
    return idmap_put(&s->string_index, str->id, s->n_names);
}

static int on_load_class(struct hprof_visitor *v, const struct hprof_load_class *l)
{
    struct search *s = (struct search *)v;
    if (s->names_known)
        return add_span(s, 'L', l->offset, 0, 0);
    if (s->n_classes == s->cap_classes) {
        size_t cap = s->cap_classes ? 2 * s->cap_classes : 4096;
        uint64_t *p = realloc(s->classes, cap * sizeof *p);
        if (p == NULL)
            return HPROF_ERR_NOMEM;
        s->classes = p;
        s->cap_classes = cap;
    }
    s->classes[s->n_classes++] = l->class_id;
    return idmap_put(&s->class_names, l->class_id, l->name_id);
}

/* The names read: each field entry learns the ids of its class. */
static void find_classes(struct search *s)
{
    for (size_t c = 0; c < s->n_classes; c++) {
        const char *name = class_name(s, s->classes[c]);
        for (int i = 0; i < s->n_entries; i++) {
            struct entry *e = &s->entries[i];
            if (e->type == T_FIELD && strcmp(e->class_name, name) == 0 &&
                e->n_class_ids < MAX_CLASS_IDS)
                e->class_ids[e->n_class_ids++] = s->classes[c];
        }
    }
    s->names_known = 1;
}

static int on_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    return add_span((struct search *)v, 'R', r->offset, 0, 0);
}

static int on_heap_begin(struct hprof_visitor *v, const struct hprof_segment *seg)
{
    return add_span((struct search *)v, 'H', seg->offset, 0, 0);
}

static int on_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    return add_span((struct search *)v, 'r', r->offset, 0, 0);
}

static int on_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *h)
{
    return add_span((struct search *)v, 'h', h->offset, 0, 0);
}

static int on_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    return add_span((struct search *)v, 'C', c->offset, c->id, 0);
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct search *s = (struct search *)v;
    for (int i = 0; i < s->n_entries; i++) {
        struct entry *e = &s->entries[i];
        if (e->type != T_FIELD || e->found)
            continue;
        for (int k = 0; k < e->n_class_ids; k++)
            if (e->class_ids[k] == o->class_id && o->length >= e->pattern_len[0] &&
                memmem(o->values, o->length, e->pattern[0], e->pattern_len[0]) != NULL) {
                e->found = 1;
                e->how = "field";
                e->offset = o->offset;
            }
    }
    return add_span(s, 'I', o->offset, o->class_id, 0);
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    return a->first ? HPROF_OK : add_span((struct search *)v, 'O', a->offset, a->class_id, 0);
}

static int on_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    return a->first ? HPROF_OK : add_span((struct search *)v, 'P', a->offset, 0, a->type);
}

/* The last record that starts at or before `offset`. */
static const struct span *span_at(const struct search *s, uint64_t offset)
{
    size_t lo = 0, hi = s->n_spans;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->spans[mid].offset <= offset)
            lo = mid;
        else
            hi = mid;
    }
    return s->n_spans && s->spans[lo].offset <= offset ? &s->spans[lo] : NULL;
}

static void describe(const struct search *s, uint64_t offset, char *out, size_t size)
{
    static const char *const types[] = { [4] = "boolean", [5] = "char", [6] = "float",
                                         [7] = "double", [8] = "byte", [9] = "short",
                                         [10] = "int", [11] = "long" };
    const struct span *sp = span_at(s, offset);
    if (sp == NULL) {
        snprintf(out, size, "the header");
        return;
    }
    switch (sp->what) {
    case 'S': snprintf(out, size, "a STRING record (a name)"); break;
    case 'L': snprintf(out, size, "a LOAD_CLASS record"); break;
    case 'H': snprintf(out, size, "a segment's header"); break;
    case 'r': snprintf(out, size, "a root"); break;
    case 'h': snprintf(out, size, "a HEAP_DUMP_INFO"); break;
    case 'C': snprintf(out, size, "the class dump of %s (statics)", class_name(s, sp->class_id)); break;
    case 'I': snprintf(out, size, "an instance of %s", class_name(s, sp->class_id)); break;
    case 'O': snprintf(out, size, "an object array"); break;
    case 'P':
        snprintf(out, size, "a %s[]'s contents",
                 sp->type < sizeof types / sizeof types[0] && types[sp->type] ? types[sp->type] : "?");
        break;
    default: snprintf(out, size, "a record"); break;
    }
}

static uint8_t *read_all(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    int got;
    while (buf != NULL && (got = gzread(f, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)got;
        if (n == cap) {
            uint8_t *p = realloc(buf, cap *= 2);
            if (p == NULL)
                free(buf);
            buf = p;
        }
    }
    if (buf != NULL && got < 0) {
        free(buf);
        buf = NULL;
    }
    gzclose(f);
    *len = n;
    return buf;
}

static int load_manifest(const char *path, struct entry *entries, int *n)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "hprof-secrets: %s: cannot open\n", path);
        return -1;
    }
    char line[1024];
    int lineno = 0;
    *n = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        if (*n == MAX_ENTRIES || parse_line(&entries[*n], line) != 0) {
            fprintf(stderr, "hprof-secrets: %s:%d: not a secret line\n", path, lineno);
            fclose(f);
            return -1;
        }
        (*n)++;
    }
    fclose(f);
    return 0;
}

static void search_bytes(struct entry *e, const uint8_t *data, size_t len)
{
    if (e->type == T_FIELD)
        return;
    for (int k = 0; k < e->n_patterns && !e->found; k++) {
        const uint8_t *hit = memmem(data, len, e->pattern[k], e->pattern_len[k]);
        if (hit != NULL) {
            e->found = 1;
            e->how = e->pattern_name[k];
            e->offset = (uint64_t)(hit - data);
        }
    }
}

/* One line per kind: the first of its entries found, in manifest order. */
static void report(const struct search *s)
{
    for (int i = 0; i < s->n_entries; i++) {
        const struct entry *e = &s->entries[i];
        int first = 1;
        for (int j = 0; j < i; j++)
            first &= strcmp(s->entries[j].kind, e->kind) != 0;
        if (!first)
            continue;
        const struct entry *hit = NULL;
        for (int j = i; j < s->n_entries && hit == NULL; j++)
            if (strcmp(s->entries[j].kind, e->kind) == 0 && s->entries[j].found)
                hit = &s->entries[j];
        if (hit == NULL) {
            printf("%s %s absent\n", e->expect, e->kind);
            continue;
        }
        char where[256];
        describe(s, hit->offset, where, sizeof where);
        printf("%s %s found %s at 0x%llx in %s\n", e->expect, e->kind, hit->how,
               (unsigned long long)hit->offset, where);
    }
}

int main(int argc, char **argv)
{
    static const struct hprof_visitor_ops ops = {
        .string = on_string, .load_class = on_load_class, .record = on_record,
        .heap_begin = on_heap_begin, .root = on_root, .heap_info = on_heap_info,
        .class_dump = on_class_dump, .instance = on_instance,
        .object_array = on_object_array, .primitive_array = on_primitive_array,
    };
    if (argc != 3) {
        fprintf(stderr, "usage: hprof-secrets MANIFEST DUMP\n");
        return 2;
    }
    static struct entry entries[MAX_ENTRIES];
    /* the first run sees names and classes alone */
    static const struct hprof_visitor_ops names_ops = { .string = on_string,
                                                        .load_class = on_load_class };
    struct search s = { .base = { &names_ops, NULL }, .entries = entries };
    if (load_manifest(argv[1], entries, &s.n_entries) != 0)
        return 2;
    size_t len;
    uint8_t *data = read_all(argv[2], &len);
    if (data == NULL) {
        fprintf(stderr, "hprof-secrets: %s: cannot read\n", argv[2]);
        return 1;
    }
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    int rc = idmap_init(&s.string_index, 1) == HPROF_OK && idmap_init(&s.class_names, 1) == HPROF_OK
                 ? hprof_reader_open_memory(&r, data, len, &err)
                 : HPROF_ERR_NOMEM;
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, &s.base);
    if (rc == HPROF_OK) {
        find_classes(&s);
        s.base.ops = &ops;
        rc = hprof_reader_run(r, &s.base);
    }
    if (rc != HPROF_OK) {
        fprintf(stderr, "hprof-secrets: %s: %s\n", argv[2], err.message[0] ? err.message : "out of memory");
    } else {
        for (int i = 0; i < s.n_entries; i++)
            search_bytes(&entries[i], data, len);
        report(&s);
    }
    hprof_reader_free(r);
    for (size_t i = 0; i < s.n_names; i++)
        free(s.names[i]);
    free(s.names);
    free(s.classes);
    free(s.spans);
    idmap_free(&s.string_index);
    idmap_free(&s.class_names);
    free(data);
    return rc == HPROF_OK ? 0 : 1;
}
