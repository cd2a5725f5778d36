/*
 * redact.h - the redaction rewrite (--redact, --redact-keep,
 * --redact-fields): the text of kept Strings becomes a filler of the same
 * length and element type, bitmap pixels a neutral grey (unless strings
 * only), except the Strings a keep rule's field refers to; with fields, the
 * primitive fields of application classes other than booleans become 0.
 *
 * It learns in pass 1 which STRING records name a rule's class or field
 * and which name JDK or Android classes; when classes are resolved, where
 * each class holds a rule's field; while instances are resolved, which
 * Strings those fields name; and in a pass of its own (exempt), which
 * value arrays those Strings hold.
 */
#ifndef HPROF_REWRITE_REDACT_H
#define HPROF_REWRITE_REDACT_H

#include "rewrite.h"

/* A keep rule, split: the Strings `cls`.`field` refers to keep their text. */
struct redact_rule {
    const char *cls, *field;
    size_t cls_len, field_len;
};
#define REDACT_BUILTIN_RULES 4
#define MAX_RULES (HPROF_REDACT_MAX_RULES + REDACT_BUILTIN_RULES)

struct redaction {
    const struct rewrite_ctx *ctx;
    struct dump_model *model;
    struct redact_rule rules[MAX_RULES];
    size_t n_rules;
    struct idmap rule_names;    /* STRING id -> bits: 2i class, 2i+1 field of rule i */
    struct idmap exempt_fields; /* class id -> start << 16 | count in exempt_at */
    struct idmap rule_class;    /* class id -> nearest class up that a rule names, or 0 */
    struct class_info **path;   /* scratch of rule_class_from() */
    size_t cap_path;
    int64_t *exempt_at;         /* offsets of fields whose Strings keep their text */
    size_t n_exempt_at, cap_exempt_at;
    struct idmap exempt_strings;/* Strings a rule names */
    struct idmap exempt_values; /* their value arrays */
    struct idmap system_names;  /* STRING ids of JDK/Android class names */
    struct idmap app_classes;   /* classes of the application (--redact-fields) */
    struct module_visitor exempt;
};

/* @return HPROF_OK, or HPROF_ERR_USAGE for a malformed keep rule. */
int redact_init(struct redaction *r, const struct rewrite_ctx *ctx, struct dump_model *model);
void redact_free(struct redaction *r);

/* A STRING record.  @return 1 when it names something redaction looks for
 * (a rule's class or field, a system package), 0 if not, or an error. */
int redact_note_string(struct redaction *r, const struct hprof_string *s);
/* Does redaction look at names at all (without --redact it has no rules)?
 * Pass 1 asks before each STRING record rather than call for nothing. */
static inline int redact_notes_strings(const struct redaction *r)
{
    return r->n_rules > 0 || r->ctx->opt->redact_fields;
}
/* Where instances of `ci` (resolved) hold a rule's field, and whether `ci`
 * is the application's. */
int redact_resolve_class(struct redaction *r, struct class_info *ci);
int redact_resolve_classes(struct redaction *r);
/* A kept instance: the Strings its rule fields name. */
int redact_resolve_instance(struct redaction *r, const struct hprof_instance *o);
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
void redact_publish(struct redaction *r, struct redact_plan *plan);

#endif
