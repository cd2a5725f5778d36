/*
 * shrink_private.h - state shared by the shrink passes (shrink.c) and the
 * write-pass filter (filter_shrink.c).
 */
#ifndef HPROF_SHRINK_PRIVATE_H
#define HPROF_SHRINK_PRIVATE_H

#include "hprof_private.h"

/* Names the shrink looks for, as codes stored in `names`. */
enum shrink_name {
    NAME_NONE,
    NAME_CLASS_STRING,      /* java.lang.String */
    NAME_CLASS_BITMAP,      /* android.graphics.Bitmap */
    NAME_CLASS_DUMP_DATA,   /* android.graphics.Bitmap$DumpData */
    NAME_CLASS_BYTE_ARRAYS, /* byte[][], the class of DumpData.buffers */
    NAME_FIELD_VALUE,       /* String.value */
    NAME_FIELD_BUFFER,      /* Bitmap.mBuffer */
    NAME_FIELD_BUFFERS,     /* DumpData.buffers */
    NAME_FIELD_NATIVES,     /* DumpData.natives */
    NAME_FIELD_CODER        /* String.coder (HotSpot: 1 = UTF-16) */
};

/* Why a primitive array keeps its contents: one sorted id list per reason
 * (8 bytes per id), since String values are most of the arrays kept and are
 * looked up in file order. */
enum keep_reason {
    KEEP_STRING_VALUE = 1,  /* char[], or Latin-1 byte[] */
    KEEP_NATIVES = 2,
    KEEP_STRING_UTF16 = 3   /* HotSpot byte[] with coder 1 */
};

/* Pass 1 also does pass 2's work while nothing it has seen could change a
 * decision already taken: names before the first object, and zygote or
 * image objects (if any) before the application's.  An instance whose class
 * layout is not complete yet is put aside and resolved when pass 1 ends.
 * HotSpot writes dumps that way, and ART too as far as names and classes
 * go. */
enum eager_state {
    EAGER_WAITING,          /* no object seen yet */
    EAGER_ON,               /* resolving as pass 1 goes */
    EAGER_ABANDONED         /* something came too late: pass 2 runs */
};

/* A --redact-keep rule, split. */
struct redact_rule {
    const char *cls, *field;
    size_t cls_len, field_len;
};
#define MAX_RULES (HPROF_REDACT_MAX_RULES + 4)

/* A bitmap buffer to deduplicate. */
struct candidate {
    uint64_t id;
    uint64_t data_offset;   /* input offset of the contents */
    uint64_t bytes;
    uint32_t count;
    uint8_t type;
    uint8_t digested;
    uint8_t unique_size;    /* no other candidate has its size: no digest */
    uint8_t has_copies;     /* other candidates were merged into this one */
    uint8_t located;        /* type, count, bytes, data_offset known before pass 4 */
    uint8_t md5[16];
};

/* A byte array seen lately: a Bitmap or a byte[][] usually comes right
 * after the buffers it names, which are then located without pass 4. */
struct recent_array {
    uint64_t id;
    uint64_t data_offset;
    uint32_t count;
};
#define RECENT_ARRAYS_BITS 12 /* 4096 of them, direct-mapped by id */

/* Where a class keeps the fields the shrink reads (-1: none). */
struct kind_layout {
    uint64_t class_id;
    int kind;               /* NAME_CLASS_* */
    int64_t field[2];       /* String: value, coder; Bitmap: mBuffer; DumpData: buffers, natives */
};

struct shrink {
    struct hprof_reader *reader;
    struct hprof_error *err;
    struct hprof_shrink_options opt;
    struct hprof_shrink_stats *stats;
    unsigned ids;
    int pass, passes;

    /* Pass 1: names, classes, system-heap membership. */
    struct idmap names;         /* STRING id -> enum shrink_name */
    struct idmap class_names;   /* class id -> STRING id (LOAD_CLASS) */
    struct classes classes;
    struct idmap kinds;         /* class id -> index into `layouts` */
    struct kind_layout *layouts;
    size_t n_layouts;
    struct idmap system;        /* zygote/image objects (not classes) */
    struct idmap large;         /* byte[] of LARGE_ARRAY+ elements, or one a
                                   byte[][] names just after it -> count */
    struct idmap large_at;      /* the same -> input offset of the contents */
    uint32_t heap;              /* heap of the current segment */
    int eager;                  /* enum eager_state: pass 2's work done in pass 1 */
    int kept_object_seen;       /* eager: a system object now would come too late */
    struct idlist deferred;     /* eager: offsets of instances of unfinished classes */
    struct idlist class_refs;   /* eager: ids class dumps refer to (stand-ins) */

    /* Pass 2 and 3: what to keep, dedupe and hollow out. */
    struct idlist keep[4];      /* by enum keep_reason: primitive array ids */
    struct idmap candidates;    /* bitmap buffer id -> index into `cand` + 1 */
    struct candidate *cand;
    size_t n_cand, cap_cand;
    struct idmap dump_buffers;  /* DumpData.buffers object-array ids */
    uint64_t *byte_arrays;      /* (byte[][] id, element) pairs seen in pass 2 */
    size_t n_byte_arrays, cap_byte_arrays;
    int byte_arrays_overflow;   /* too many to remember: run the expand pass */
    struct idmap standins;      /* system objects some kept object refers to */

    /* Pass 4: digests, then the merge decision.  Pass 4 also finds what
     * else refers to a buffer that merges (pinned); passes 1-2 put every
     * reference it would look at into `refs_seen`, which can say that none
     * names such a buffer, and then pass 4 is not needed for that. */
    struct digest *digest;
    struct idmap pinned;        /* candidates referenced from other slots */
    struct idfilter refs_seen;  /* words NULL: not tracked (no bitmap names) */
    struct recent_array *recent;/* byte arrays seen last, by id (or NULL) */
    unsigned names_seen;        /* bits 1 << NAME_*, from pass 1 */
    int heap_started;           /* pass 1 reached the first heap segment */
    int refs_incomplete;        /* tracking began after some references */
    struct idmap remap;         /* duplicate buffer id -> kept buffer id */
    struct idmap dropped;       /* duplicates whose record goes */

    /* --redact */
    struct redact_rule rules[MAX_RULES];
    size_t n_rules;
    struct idmap rule_names;    /* STRING id -> bits: 2i class, 2i+1 field of rule i */
    struct idmap exempt_fields; /* class id -> start << 16 | count in exempt_at */
    int64_t *exempt_at;         /* offsets of fields whose Strings keep their text */
    size_t n_exempt_at, cap_exempt_at;
    struct idmap exempt_strings;/* Strings a rule names */
    struct idmap exempt_values; /* their value arrays */
    struct idmap system_names;  /* STRING ids of JDK/Android class names */
    struct idmap app_classes;   /* classes of the application (--redact-fields) */
};

/* The kind of class `class_id` (NAME_CLASS_*), its layout in *out. */
static inline int shrink_kind(const struct shrink *sh, uint64_t class_id,
                              const struct kind_layout **out)
{
    uint64_t at;
    if (!idmap_get(&sh->kinds, class_id, &at))
        return NAME_NONE;
    *out = &sh->layouts[at];
    return sh->layouts[at].kind;
}

/* Why array `id` keeps its contents (enum keep_reason), or 0. */
static inline int shrink_keep_reason(struct shrink *sh, uint64_t id)
{
    for (int why = KEEP_STRING_VALUE; why <= KEEP_STRING_UTF16; why++)
        if (idlist_has(&sh->keep[why], id))
            return why;
    return 0;
}

/* Is this object dropped with its heap (unless it is a stand-in)? */
static inline int shrink_in_system(const struct shrink *sh, uint64_t id)
{
    return sh->system.count > 0 && idmap_has(&sh->system, id);
}

/* The ID at byte `at` of an instance's values, or 0 past its end. */
static inline uint64_t shrink_field_id(const struct shrink *sh, const struct hprof_instance *o,
                                       int64_t at)
{
    if (at < 0 || (uint64_t)at + sh->ids > o->length)
        return 0;
    return get_id(o->values + at, sh->ids);
}

/* The write pass: a filter in front of `next` (the writer). */
struct shrink_filter;
struct shrink_filter *shrink_filter_new(struct shrink *sh, struct hprof_visitor *next);
struct hprof_visitor *shrink_filter_visitor(struct shrink_filter *f);
void shrink_filter_free(struct shrink_filter *f);

/* One pass over the input through `chain`, timed and counted. */
int shrink_run_pass(struct shrink *sh, struct hprof_visitor *chain);

/* Threads the shrink may use: sh->opt.threads, or for 0 one per core, but
 * one only for inputs under 32 MiB, whose passes take a few milliseconds:
 * starting helpers costs about what they save there. */
unsigned shrink_threads(const struct shrink *sh);

/* write_pass.c: the write pass through `f` (in front of `w`), on
 * shrink_threads() threads.  The two limits are variables so that tests can
 * send segments and jobs down the calling thread's way. */
int shrink_write_pass(struct shrink *sh, struct hprof_writer *w, struct shrink_filter *f);
extern size_t write_pass_segment_max;
extern size_t write_pass_output_max;

#endif
