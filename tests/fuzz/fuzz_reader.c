/*
 * fuzz_reader - the reader over arbitrary bytes, with a visitor that touches
 * every byte it is handed.  Asserts: no crash, no sanitizer report, no read
 * outside what the reader hands out; an error always carries a message that
 * starts with the offset.
 */
#include <stdlib.h>
#include <string.h>

#include "hprof.h"

struct toucher {
    struct hprof_visitor base;
    unsigned sum;
};

static void touch(struct toucher *t, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        t->sum += p[i];
}

static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    touch((struct toucher *)v, s->utf8, s->length);
    return HPROF_OK;
}

static int on_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    touch((struct toucher *)v, r->body, r->length);
    return HPROF_OK;
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    touch((struct toucher *)v, o->values, o->length);
    return HPROF_OK;
}

static int on_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct toucher *t = (struct toucher *)v;
    for (unsigned i = 0; i < c->n_fields; i++)
        t->sum += c->fields[i].type;
    for (unsigned i = 0; i < c->n_statics; i++)
        t->sum += (unsigned)c->statics[i].value;
    return HPROF_OK;
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    touch((struct toucher *)v, a->elements, (size_t)a->n * 4); /* at least 4-byte ids */
    return HPROF_OK;
}

static int on_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    touch((struct toucher *)v, a->data, a->length);
    return HPROF_OK;
}

static const struct hprof_visitor_ops ops = {
    .string = on_string, .record = on_record, .instance = on_instance,
    .class_dump = on_class_dump, .object_array = on_object_array,
    .primitive_array = on_primitive_array,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct toucher t = { { &ops, NULL }, 0 };
    int rc = hprof_reader_open_memory(&r, data, size, &err);
    if (rc == HPROF_OK) {
        hprof_reader_set_strict(r, size & 1);
        rc = hprof_reader_run(r, &t.base);
    }
    if (rc != HPROF_OK && (err.message[0] == '\0' || strncmp(err.message, "offset 0x", 9) != 0))
        abort(); /* every failure explains itself, with an offset */
    hprof_reader_free(r);
    return 0;
}
