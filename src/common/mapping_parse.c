/*
 * mapping_parse.c - reading a ProGuard/R8 mapping file into the tables of
 * mapping.c (the file's text, kept whole, with a NUL after each name cut
 * out of it; a record per class and member line).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hprof_private.h"
#include "mapping.h"
#include "mapping_private.h"

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

/* The line as the message shows it: its first 120 bytes, a control
 * character (an escape sequence would reach the terminal) as \xNN. */
#define SHOWN_BYTES 120

static int malformed(struct parse *p, const char *why, const char *s, const char *end)
{
    char shown[SHOWN_BYTES * 4 + 1];
    size_t n = 0;
    for (const char *c = s; c < end && c < s + SHOWN_BYTES; c++) {
        unsigned char u = (unsigned char)*c;
        if (u < 0x20 || u == 0x7f)
            n += (size_t)snprintf(shown + n, sizeof shown - n, "\\x%02x", u);
        else
            shown[n++] = (char)u;
    }
    shown[n] = '\0';
    return hprof_error_set(p->err, HPROF_ERR_FORMAT, "%s:%zu: malformed mapping line (%s): %s",
                           p->name, p->line, why, shown);
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
    struct map_class *grown = mapping_grow(m->classes, &m->cap_classes, m->n_classes, sizeof *grown);
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
    struct map_member *grown = mapping_grow(m->members, &m->cap_members, m->n_members, sizeof *grown);
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
        rc = mapping_index_all(m, name, err);
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

int hprof_mapping_load(const char *path, struct hprof_mapping **out, struct hprof_error *err)
{
    return mapping_load(path, out, err);
}

void hprof_mapping_free(struct hprof_mapping *m)
{
    mapping_free(m);
}
