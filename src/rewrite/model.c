/*
 * model.c - names, classes and class kinds, for every rewrite.
 */
#include <stdlib.h>

#include "model.h"

static int nomem(struct hprof_error *err)
{
    return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
}

int model_init(struct dump_model *m, unsigned ids)
{
    *m = (struct dump_model){ .ids = ids };
    if (idmap_init(&m->names, 1) || idmap_init(&m->class_names, 1) ||
        classes_init(&m->classes, ids) || idmap_init(&m->kinds, 1))
        return HPROF_ERR_NOMEM;
    return HPROF_OK;
}

void model_free(struct dump_model *m)
{
    idmap_free(&m->names);
    idmap_free(&m->class_names);
    classes_free(&m->classes);
    idmap_free(&m->kinds);
    free(m->layouts);
}


int model_note_load_class(struct dump_model *m, const struct hprof_load_class *c)
{
    return idmap_put(&m->class_names, c->class_id, c->name_id);
}

struct name_match {
    const struct dump_model *m;
    int code;
};

static int match_name(void *ctx, uint64_t name_id)
{
    struct name_match *nm = ctx;
    uint64_t code;
    return idmap_get(&nm->m->names, name_id, &code) && (int)code == nm->code;
}

static int64_t field_at(const struct dump_model *m, const struct class_info *ci, int code,
                        uint8_t type)
{
    struct name_match nm = { m, code };
    return classes_field_offset(&m->classes, ci, match_name, &nm, type);
}

int model_resolve_kind(struct dump_model *m, const struct class_info *ci, struct hprof_error *err)
{
    uint64_t name_id, code;
    if (!idmap_get(&m->class_names, ci->id, &name_id) || !idmap_get(&m->names, name_id, &code) ||
        code < NAME_CLASS_STRING || code > NAME_CLASS_BYTE_ARRAYS)
        return HPROF_OK;
    struct kind_layout *grown = realloc(m->layouts, (m->n_layouts + 1) * sizeof *grown);
    if (grown == NULL)
        return nomem(err);
    m->layouts = grown;
    struct kind_layout *k = &m->layouts[m->n_layouts];
    *k = (struct kind_layout){ .class_id = ci->id, .kind = (int)code,
                               .field = { -1, -1, -1, -1 } };
    if (code == NAME_CLASS_STRING) {
        k->field[0] = field_at(m, ci, NAME_FIELD_VALUE, HPROF_TYPE_OBJECT);
        k->field[1] = field_at(m, ci, NAME_FIELD_CODER, HPROF_TYPE_BYTE);
        k->field[2] = field_at(m, ci, NAME_FIELD_OFFSET, HPROF_TYPE_INT);
        k->field[3] = field_at(m, ci, NAME_FIELD_COUNT, HPROF_TYPE_INT);
    } else if (code == NAME_CLASS_BITMAP) {
        k->field[0] = field_at(m, ci, NAME_FIELD_BUFFER, HPROF_TYPE_OBJECT);
    } else if (code == NAME_CLASS_DUMP_DATA) {
        k->field[0] = field_at(m, ci, NAME_FIELD_BUFFERS, HPROF_TYPE_OBJECT);
        k->field[1] = field_at(m, ci, NAME_FIELD_NATIVES, HPROF_TYPE_OBJECT);
    }
    return idmap_put(&m->kinds, ci->id, m->n_layouts++) == HPROF_OK ? HPROF_OK : nomem(err);
}

int model_resolve_kinds(struct dump_model *m, struct hprof_error *err)
{
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < m->classes.n_info; i++)
        rc = model_resolve_kind(m, &m->classes.info[i], err);
    return rc;
}

int model_forget_kinds(struct dump_model *m, struct hprof_error *err)
{
    m->n_layouts = 0;
    return idmap_reset(&m->kinds) == HPROF_OK ? HPROF_OK : nomem(err);
}
