/*
 * plan.c - the plan's storage.
 */
#include <string.h>

#include "plan.h"

int plan_init(struct shrink_plan *p)
{
    memset(p, 0, sizeof *p);
    idlist_init(&p->strings.values);
    idlist_init(&p->strings.utf16);
    idlist_init(&p->bitmaps.natives);
    if (deobf_plan_init(&p->deobf) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    return names_plan_init(&p->names);
}

void plan_free(struct shrink_plan *p)
{
    idlist_free(&p->strings.values);
    idlist_free(&p->strings.utf16);
    idlist_free(&p->bitmaps.natives);
    idmap_free(&p->bitmaps.candidates);
    idmap_free(&p->bitmaps.remap);
    idmap_free(&p->bitmaps.dropped);
    idmap_free(&p->bitmaps.dump_buffers);
    idmap_free(&p->system.objects);
    idmap_free(&p->system.standins);
    idmap_free(&p->system.device);
    idmap_free(&p->redact.exempt_values);
    idmap_free(&p->redact.field_classes);
    idmap_free(&p->redact.field_names);
    idmap_free(&p->redact.clearing);
    idmap_free(&p->redact.blind);
    names_plan_free(&p->names);
    deobf_plan_free(&p->deobf);
}
