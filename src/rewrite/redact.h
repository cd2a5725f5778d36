/*
 * redact.h - the redaction rewrite (--redact, --redact-keep,
 * --redact-fields), whose privacy model man/hprof-shrink.1 states: the
 * text of kept Strings becomes a filler of the same length and element
 * type, bitmap pixels a neutral grey (unless strings only), except the
 * Strings a keep rule's field refers to; the hash caches derived from
 * texts (String.hash, hash-table nodes' hash) become 0; with fields, every
 * primitive field but booleans and the structural ones analyzers read (the
 * table in redact_table.c) becomes 0.
 *
 * It learns in pass 1 which STRING records name a rule's class or field
 * and which name a class or field of the field table; when classes are
 * resolved, where each class holds a rule's field; while instances are
 * resolved, which Strings those fields name; and in a pass of its own
 * (exempt), which value arrays those Strings hold.
 */
#ifndef HPROF_REWRITE_REDACT_H
#define HPROF_REWRITE_REDACT_H

#include "rewrite.h"

/* A keep rule, split: the Strings `cls`.`field` refers to keep their text
 * (with `runtime_names`, only a text of the runtime's thread names). */
struct redact_rule {
    const char *cls, *field;
    size_t cls_len, field_len;
    int runtime_names;
};
#define REDACT_BUILTIN_RULES 8
#define MAX_RULES (HPROF_REDACT_MAX_RULES + REDACT_BUILTIN_RULES)

/* Where instances of a class hold a rule's field. */
struct exempt_field {
    int64_t at;
    int runtime_names;
};

/* The slots of the field table's index of names (redact.c): a power of
 * two, over twice its entries. */
#define TABLE_SLOTS 256

/* Values of exempt_strings. */
#define EXEMPT_ALWAYS 0
#define EXEMPT_IF_RUNTIME_NAME 1

/* An entry of exempt_values: how (EXEMPT_*) in bit 0, and above it how
 * many elements from the first the String that exempts the array holds
 * (model_string_covers(), EXEMPT_COVERS_ALL for all): the array keeps its
 * text only if that is all of it, so that a substring a rule names does
 * not keep the rest of the array it shares. */
#define EXEMPT_COVERS_ALL (UINT64_MAX >> 1)

static inline uint64_t exempt_entry(uint64_t how, uint64_t covers)
{
    return how | (covers < EXEMPT_COVERS_ALL ? covers : EXEMPT_COVERS_ALL) << 1;
}

/* Of two Strings' entries for one array, the one that exempts it where
 * either would: the one that holds more of it, or the more lenient. */
static inline uint64_t exempt_merge(uint64_t a, uint64_t b)
{
    if (a >> 1 != b >> 1)
        return a >> 1 > b >> 1 ? a : b;
    return (a & 1) <= (b & 1) ? a : b;
}

/* Whether entry `e` covers an array of `count` elements. */
static inline int exempt_covers(uint64_t e, uint64_t count)
{
    return e >> 1 == EXEMPT_COVERS_ALL || e >> 1 == count;
}

struct redaction {
    const struct rewrite_ctx *ctx;
    struct dump_model *model;
    struct redact_rule rules[MAX_RULES];
    size_t n_rules;
    struct idmap rule_classes;  /* STRING id -> bit i: names rule i's class */
    struct idmap rule_fields;   /* STRING id -> bit i: names rule i's field */
    struct idmap exempt_fields; /* class id -> start << 16 | count in exempt_at */
    struct idmap rule_class;    /* class id -> nearest class up that a rule names, or 0 */
    struct class_info **path;   /* scratch of the walks up a class chain */
    size_t cap_path;
    struct exempt_field *exempt_at;
    size_t n_exempt_at, cap_exempt_at;
    struct idmap exempt_strings;/* String id -> EXEMPT_* */
    struct idmap exempt_values; /* their value arrays -> EXEMPT_* */
    /* Told of each String a rule names for the first time (NULL: nobody):
     * the one pass, whose String may have gone by with its text. */
    void (*on_exempt)(void *ctx, uint64_t string_id);
    void *on_exempt_ctx;
    uint16_t table_slots[2][TABLE_SLOTS]; /* class (0), field (1) names: 1 + first entry */
    size_t table_longest[2];
    struct idmap table_classes; /* STRING id -> 1 + first field-table entry of that class */
    struct idmap table_fields;  /* STRING id -> 1 + a field-table entry of that field name */
    struct idmap field_classes; /* class id -> 1 + first field-table entry of its name */
    struct idmap clear_memo;    /* class id -> 1 + whether a class up its chain has a cleared field */
    struct idmap clearing;      /* classes whose instances hold a field --redact clears */
    /* Classes the field table could not be read for: a name of their chain
     * came after them (the one pass).  Every number of theirs goes. */
    struct idmap blind;
    struct module_visitor exempt;
};

/* @return HPROF_OK, or HPROF_ERR_USAGE for a malformed keep rule. */
int redact_init(struct redaction *r, const struct rewrite_ctx *ctx, struct dump_model *model);
void redact_free(struct redaction *r);

/* A STRING record.  @return 1 when it names something redaction looks for
 * (a rule's class or field, a class or field of the field table), 0 if
 * not, or an error. */
int redact_note_string(struct redaction *r, const struct hprof_string *s);
/* Does redaction look at names at all (without --redact it has no rules)?
 * Pass 1 asks before each STRING record rather than call for nothing. */
static inline int redact_notes_strings(const struct redaction *r)
{
    return r->n_rules > 0 || r->ctx->opt->redact_fields;
}
/* Where instances of `ci` (resolved) hold a rule's field, whether its
 * class is in the field table, and whether --redact clears some field of
 * its instances. */
int redact_resolve_class(struct redaction *r, struct class_info *ci);
int redact_resolve_classes(struct redaction *r);
/* A kept instance: the Strings its rule fields name. */
int redact_resolve_instance(struct redaction *r, const struct hprof_instance *o);
/* String `id` keeps its text, whatever refers to it: for the resolution's
 * other modules (what this module's rules cannot name, such as the Strings
 * a class's static fields refer to).  Forgotten by redact_forget(). */
int redact_exempt_string(struct redaction *r, uint64_t id);
/* Forget what was resolved, to resolve again. */
int redact_forget(struct redaction *r);

/* The exempt pass, needed when some String is exempt. */
static inline int redact_needs_exempt_pass(const struct redaction *r)
{
    return r->exempt_strings.count > 0;
}
struct hprof_visitor *redact_exempt_visitor(struct redaction *r);

/* String value array `value` holds the device's text, not the user's: kept. */
int redact_keep_device_text(struct redaction *r, uint64_t value);
/* Value array `value` exempt as `entry` (exempt_entry()) says, or as the
 * entry it has says where that exempts it more (exempt_merge()).
 * @return HPROF_OK or HPROF_ERR_NOMEM. */
int redact_exempt_value(struct redaction *r, uint64_t value, uint64_t entry);
void redact_publish(struct redaction *r, struct redact_plan *plan);

#endif
