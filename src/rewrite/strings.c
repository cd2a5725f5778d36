/*
 * strings.c - the String rewrite (see strings.h).  It has no write-pass
 * filter of its own: an array the plan keeps is one the arrays filter
 * leaves alone, and --redact fills it (redact.c).
 */
#include "strings.h"

void strings_init(struct strings_keep *s)
{
    idlist_init(&s->values);
    idlist_init(&s->utf16);
}

void strings_free(struct strings_keep *s)
{
    idlist_free(&s->values);
    idlist_free(&s->utf16);
}

int strings_resolve_instance(struct strings_keep *s, const struct kind_layout *k,
                             const struct hprof_instance *o, unsigned ids)
{
    int64_t coder = k->field[1];
    int utf16 = coder >= 0 && (uint64_t)coder < o->length && o->values[coder] == 1;
    uint64_t value = model_field_id(ids, o, k->field[0]);
    if (value == 0)
        return HPROF_OK;
    return idlist_add(utf16 ? &s->utf16 : &s->values, value);
}

void strings_forget(struct strings_keep *s)
{
    idlist_clear(&s->values);
    idlist_clear(&s->utf16);
}

int strings_publish(struct strings_keep *s, struct strings_plan *plan)
{
    if (idlist_seal(&s->values) != HPROF_OK || idlist_seal(&s->utf16) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    plan->values = s->values;
    plan->utf16 = s->utf16;
    strings_init(s); /* the plan owns the lists now */
    return HPROF_OK;
}
