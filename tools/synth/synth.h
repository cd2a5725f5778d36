/*
 * synth.h - the parts of hprof-synth: the generator's state and the
 * records it writes (records.c), the planted secrets (secrets.c), the
 * modelled heap (model.c); hprof-synth.c puts a dump together.
 */
#ifndef HPROF_SYNTH_H
#define HPROF_SYNTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hprof.h"

enum { MAX_STRINGS = 256, MAX_FIELDS = 16 };

struct synth {
    struct hprof_visitor *out;
    int android;
    unsigned ids;
    uint64_t next_object;
    uint64_t next_string;
    uint32_t next_serial;
    uint64_t rng;
    int rc;

    /* STRING ids already written, by text. */
    const char *texts[MAX_STRINGS];
    uint64_t text_ids[MAX_STRINGS];
    int n_texts;

    /* The open segment. */
    int seg_open;
    unsigned seg_objects, seg_limit;
    uint64_t seg_bytes, seg_byte_limit; /* the body so far; ART's limit */
    uint32_t seg_heap;              /* heap of the last HEAP_DUMP_INFO, ~0 none */
    uint8_t seg_tag;                /* HEAP_DUMP_SEGMENT, or HEAP_DUMP (--whole-dumps) */

    /* Bookkeeping for --manifest. */
    uint64_t instances[2], object_arrays[2], primitive_arrays[2]; /* [system, app] */
    uint64_t class_dumps, roots, roots_to_system_dropped;
    uint64_t string_instances_app, bitmaps, bitmap_slots;
    uint64_t dedupe_groups, dedupe_merged, dedupe_dropped;
    uint64_t standins;
    int system_links;               /* --system-links */

    struct secrets *secrets;    /* --secrets: plant them, NULL otherwise */

    /* --late-referrers: app Strings and Bitmaps held back that many
     * records (their arrays go first) */
    unsigned late_after;
    uint64_t late_classes[2];
    struct late_instance *late;
    size_t n_late, cap_late, first_late;
    uint64_t records_placed;
    int releasing;
};

/* Ids of the classes and of named objects the heap refers to. */
struct model {
    uint64_t object, string, object_array, byte_array_array, thread;
    uint64_t bitmap, dump_data, base, derived, leaf, statics;
    uint64_t dump_data_instance;
    uint64_t primitive_array_classes[8];
    uint64_t keyed_ref, activity, main_activity;
    uint64_t build, build_version, reference, references[4], klass; /* --system-links */
    uint32_t thread_serial, stack_serial;
};

#define CHECK(s) do { if ((s)->rc < 0) return; } while (0)

struct fdef {
    const char *name;
    uint8_t type;
};

/* Field values are assembled big-endian, own class first. */
struct values {
    uint8_t b[128];
    size_t n;
};

struct late_instance {
    uint64_t due;               /* written once this many records are placed */
    uint32_t heap;
    uint64_t id, class_id;
    struct values v;
};

/* Writes the held-back instances that are due (all with `all`). */
void release_late(struct synth *s, int all);

enum { BOXED_INT, BOXED_LONG, BOXED_DOUBLE, BOXED_FLOAT, BOXED_CHAR, BOXED_SHORT, BOXED_BYTE,
       N_BOXED };

struct secrets {
    FILE *manifest;
    uint64_t rng;
    uint64_t boxed[N_BOXED], uuid, date, node, location, build, account, byte_holder, vault,
        keyed_ref_1x;
};

struct links {
    uint64_t shared, named, behind, behind_child, leak;   /* app */
    uint64_t chain, named_by, behind_zygote;               /* zygote */
};

/* records.c: ids, STRING and LOAD_CLASS records, segments and sub-records */
uint64_t string_object(struct synth *s, const struct model *m, uint32_t heap,
                       const char *text);
uint64_t string_object_hashed(struct synth *s, const struct model *m, uint32_t heap,
                              const char *text, uint32_t hash);
uint8_t *pattern(uint64_t seed, size_t len);
void primitive_array(struct synth *s, uint32_t heap, uint64_t id, uint8_t type,
                     const void *data, uint32_t count);
void object_array(struct synth *s, uint32_t heap, uint64_t id, uint64_t class_id,
                  const uint64_t *elements, uint32_t n);
void instance(struct synth *s, uint32_t heap, uint64_t id, uint64_t class_id,
              const struct values *v);
void put(struct values *v, uint64_t x, unsigned size);
void class_dump(struct synth *s, uint32_t heap, uint64_t id, uint64_t super_id,
                const struct fdef *fields, unsigned n_fields,
                const struct hprof_static_field *statics, unsigned n_statics,
                const struct hprof_constant *constants, unsigned n_constants,
                uint32_t instance_size);
void root(struct synth *s, uint8_t tag, uint64_t id, uint32_t thread, uint32_t frame);
void place(struct synth *s, uint32_t heap, uint64_t bytes);
void end_segment(struct synth *s);
uint64_t load_class(struct synth *s, const char *name);
const char *class_name(struct synth *s, const char *android, const char *hotspot);
uint64_t string_id(struct synth *s, const char *text);
uint64_t new_object_id(struct synth *s);
uint64_t next_random(struct synth *s);

/* secrets.c */
void plant_secrets(struct synth *s, const struct model *m);
void load_secret_classes(struct synth *s);

/* model.c: the classes and objects of the modelled heap */
void system_links_roots(struct synth *s, const struct links *l);
void system_links_app(struct synth *s, const struct model *m, const struct links *l);
void system_links_zygote(struct synth *s, const struct model *m, struct links *l);
void pixel_bitmaps(struct synth *s, const struct model *m, uint64_t budget);
void bitmaps(struct synth *s, const struct model *m, size_t big_bytes);
void bitmap(struct synth *s, const struct model *m, uint64_t buffer, uint32_t width,
            uint32_t height, int recycled);
uint64_t population(struct synth *s, const struct model *m, unsigned round,
                    unsigned objects, size_t payload_bytes);
void derived_values(struct synth *s, struct values *v, uint64_t payload, uint64_t next,
                    uint32_t id, uint64_t name);
void base_values(struct synth *s, struct values *v, uint32_t id, uint64_t name);
void leak_candidates(struct synth *s, const struct model *m);
void app_classes(struct synth *s, const struct model *m, uint64_t static_string);
void system_classes(struct synth *s, const struct model *m);
void stack_records(struct synth *s, struct model *m);
void define_classes(struct synth *s, struct model *m);

#endif
