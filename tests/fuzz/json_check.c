/*
 * json_check.c - a strict JSON checker (RFC 8259) for the info fuzz target
 * and the tests: one value, nothing after it but whitespace, strings of
 * valid UTF-8 (no overlong forms, no surrogates encoded in UTF-8) without
 * raw control characters, escapes as the grammar has them, numbers as the
 * grammar has them, and no key twice in one object (compared as written).
 * A recursive descent over the bytes; nesting deeper than JSON_MAX_DEPTH is
 * refused rather than trusted to the stack.
 */
#include <stdlib.h>
#include <string.h>

#include "json_check.h"

#define JSON_MAX_DEPTH 64

struct parser {
    const unsigned char *p, *end;
    int depth;
};

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int hex(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* One UTF-8 sequence at p: its length, or 0 when it is not UTF-8. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    size_t n = (size_t)(end - p);
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (p[0] >= 0xe0 && p[0] <= 0xef) {
        if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
            return 0;
        if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))
            return 0;
        return 3;
    }
    if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
            return 0;
        if ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
            return 0;
        return 4;
    }
    return 0;
}

static int string(struct parser *ps)
{
    if (ps->p >= ps->end || *ps->p != '"')
        return -1;
    ps->p++;
    while (ps->p < ps->end) {
        unsigned char c = *ps->p;
        if (c == '"') {
            ps->p++;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            if (++ps->p >= ps->end)
                return -1;
            c = *ps->p++;
            if (c == 'u') {
                if (ps->end - ps->p < 4 || !hex(ps->p[0]) || !hex(ps->p[1]) || !hex(ps->p[2]) ||
                    !hex(ps->p[3]))
                    return -1;
                ps->p += 4;
            } else if (!strchr("\"\\/bfnrt", c) || c == '\0') {
                return -1;
            }
            continue;
        }
        size_t k = utf8_seq(ps->p, ps->end);
        if (k == 0)
            return -1;
        ps->p += k;
    }
    return -1;
}

static int digits(struct parser *ps)
{
    const unsigned char *start = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
        ps->p++;
    return ps->p > start ? 0 : -1;
}

static int number(struct parser *ps)
{
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p < ps->end && *ps->p == '0')
        ps->p++;
    else if (digits(ps) != 0)
        return -1;
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (digits(ps) != 0)
            return -1;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (digits(ps) != 0)
            return -1;
    }
    return 0;
}

static int literal(struct parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return -1;
    ps->p += n;
    return 0;
}

static int value(struct parser *ps);

struct key {
    const unsigned char *at;
    size_t len;
};

static int object(struct parser *ps)
{
    struct key *keys = NULL;
    size_t n = 0, cap = 0;
    int rc = -1;
    ps->p++; /* { */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        const unsigned char *k = ps->p;
        if (string(ps) != 0)
            goto out;
        size_t len = (size_t)(ps->p - k);
        for (size_t i = 0; i < n; i++)
            if (keys[i].len == len && memcmp(keys[i].at, k, len) == 0)
                goto out; /* a key twice */
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            struct key *grown = realloc(keys, cap * sizeof *keys);
            if (grown == NULL)
                goto out;
            keys = grown;
        }
        keys[n].at = k;
        keys[n++].len = len;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            goto out;
        ps->p++;
        if (value(ps) != 0)
            goto out;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            rc = 0;
        }
        goto out;
    }
out:
    free(keys);
    return rc;
}

static int array(struct parser *ps)
{
    ps->p++; /* [ */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 0;
    }
    for (;;) {
        if (value(ps) != 0)
            return -1;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return 0;
        }
        return -1;
    }
}

static int value(struct parser *ps)
{
    int rc;
    skip_ws(ps);
    if (ps->p >= ps->end)
        return -1;
    if (++ps->depth > JSON_MAX_DEPTH)
        return -1;
    switch (*ps->p) {
    case '{': rc = object(ps); break;
    case '[': rc = array(ps); break;
    case '"': rc = string(ps); break;
    case 't': rc = literal(ps, "true"); break;
    case 'f': rc = literal(ps, "false"); break;
    case 'n': rc = literal(ps, "null"); break;
    default: rc = number(ps); break;
    }
    ps->depth--;
    return rc;
}

long json_check(const void *text, size_t len)
{
    struct parser ps = { text, (const unsigned char *)text + len, 0 };
    if (value(&ps) != 0)
        return ps.p - (const unsigned char *)text;
    skip_ws(&ps);
    if (ps.p != ps.end)
        return ps.p - (const unsigned char *)text;
    return -1;
}
