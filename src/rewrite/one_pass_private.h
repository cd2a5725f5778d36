/*
 * one_pass_private.h - the state of a one-pass shrink, shared by its
 * files, each calling only those after it: one_pass_run.c (setting up and
 * tearing down), one_pass.c (the records as they come, the end of each
 * heap dump), one_pass_claims.c (the window at work: claims, merges, the
 * rule, primitive arrays), one_pass_twins.c (claimed buffers waiting, by
 * their bytes), one_pass_prelude.c (a heap dump before its
 * first object), one_pass_names.c (STRING records), one_pass_system.c (the
 * zygote and image heaps), one_pass_spill.c (large arrays set aside in
 * the output file while they wait), one_pass_out.c (what goes down the chain, and
 * the plan's parts that grow as the input is read), one_pass_window.c (the
 * window's storage), one_pass_checks.c (the input's checks).
 */
#ifndef HPROF_REWRITE_ONE_PASS_PRIVATE_H
#define HPROF_REWRITE_ONE_PASS_PRIVATE_H

#include "model.h"
#include "one_pass.h"
#include "plan.h"
#include "redact.h"
#include "rewrite.h"
#include "system_heaps.h"
#include "used_names.h"

/* What claimed an array not read yet (values of `claims`): an enum
 * array_keep in the low bits, CLAIM_PINNED for a buffer that stays (a
 * Bitmap that names it was written already), or the DumpData.buffers
 * array itself. */
#define CLAIM_KEEP 0xFFu
#define CLAIM_PINNED 0x100u
#define CLAIM_BUFFERS_ARRAY 0x200u
#define CLAIM_DECIDE_NOW 0x400u    /* a buffer decided as soon as it is read */
#define CLAIM_NONE 0xFFFFFFFFu

/* one_pass_system_object(): the object is in a heap that is dropped. */
#define ONE_PASS_DROPPED 2

#define ONE_PASS_HEAPS 8

struct heap_name {
    uint32_t heap;
    uint64_t name;              /* the STRING id of its HEAP_DUMP_INFO */
};

struct merge_entry {
    uint64_t id;                /* the buffer kept */
    uint64_t data_offset;       /* where its data is in the input */
    uint64_t out_at;            /* where its data went in the output (UINT64_MAX: unknown) */
    uint8_t sha[32];            /* SHA-256, or a fingerprint (confirm_by_reading) */
    uint32_t count;
    uint8_t type;
    uint8_t merged;             /* a copy has merged into it */
    size_t next;                /* 1 + the next entry under the same key, or 0 */
};

struct one_pass_system;

/* An array set aside in the output's scratch area (one_pass_spill.c). */
struct spilled {
    struct hprof_primitive_array array; /* as read; `length`: all its bytes */
    uint64_t at;                /* where its data is in the scratch area */
    uint32_t heap;
    uint8_t keep;               /* its verdict once claimed (enum array_keep) */
    uint8_t sent;               /* gone down the chain */
};

struct one_pass_spill {
    struct spilled *list;       /* this heap dump's, in the order read */
    size_t n, cap;
    size_t oldest;              /* no entry before it is waiting */
    struct id_table index;      /* id -> 1 + its place in `list`, while waiting */
    uint64_t end;               /* scratch bytes written */
    uint64_t waiting_bytes;
    uint64_t limit;             /* of waiting_bytes; 0: nothing is set aside */
    size_t open;                /* 1 + the entry whose chunks are coming, or 0 */
    uint64_t open_have;
    uint8_t *chunk;             /* contents read back, a chunk at a time */
};

/* Where DumpData's array of buffers, written already, names a buffer not
 * read yet (one_pass_claims.c): the buffer may merge when it comes, its
 * slots then patched in the output to name its twin. */
struct buffer_slot {
    uint64_t at;                /* output offset */
    size_t next;                /* 1 + the buffer's slot before, or 0 */
};

struct buffer_slots {
    struct id_table last;       /* buffer id -> 1 + its last slot in `at` */
    struct buffer_slot *at;
    size_t n, cap;
    uint64_t *pending;          /* of the array being claimed: buffer id, element, ... */
    size_t n_pending, cap_pending;
};

/* The buffers Bitmaps claimed that wait in the window, by their bytes
 * (one_pass_twins.c): a list under each key, newest first, linked both
 * ways. */
struct waiting_twins {
    struct id_table newest;     /* key of type, length and fingerprint -> a buffer's id */
    struct id_table older;      /* buffer id -> the one claimed before it under its key */
    struct id_table newer;      /* buffer id -> the one claimed after it under its key */
    struct id_table key_of;     /* buffer id -> its key */
};

/* A root or class dump held before a heap dump's first object (its
 * tables follow), with the heap it was read in. */
struct held_sub {
    struct held_sub *next;
    uint32_t heap;
    int is_root;
    struct hprof_root root;
    struct hprof_class_dump cd;
};

/* Where names wait in the output file's scratch area: past the arrays set
 * aside (one_pass_spill.c), whose offsets start at 0 and stay under it. */
#define NAMES_SCRATCH_AT ((uint64_t)1 << 40)

/* STRING records held until something refers to them (one_pass_names.c).
 * Their places run on from the first held: those under `disk_bytes` wait
 * in the output file's scratch area, the others in `bytes`. */
struct held_names {
    uint8_t *bytes;             /* each: time u4, id u8, length u4, text */
    size_t n_bytes, cap_bytes;
    struct id_table index;      /* id -> 1 + its place, while held */
    uint64_t disk_bytes;        /* the places written to the scratch area */
    int to_disk;                /* past `limit`, names go there */
    uint8_t *read;              /* names read back from there */
    size_t read_cap, read_len;
    uint64_t read_at;           /* the place of read[0] */
    struct idmap used;          /* ids something referred to */
    struct id_table unread;     /* ... before a STRING of theirs was read */
    uint8_t *after;             /* copies of the names to write after the heap dump */
    size_t n_after, cap_after;  /* (bytes, as in `bytes`) */
    int keep_unused;            /* JAVA PROFILE 1.0.3: the names held at a decision point are kept */
    /* Under --redact, the names held at a decision point, written with a
     * filler: id -> the output offset of the filler (UINT64_MAX: not
     * known), until a record uses the name and its text goes over it. */
    struct id_table filled;
    uint64_t limit;
    /* Where names are not held (--keep-names) under --redact: the ids of
     * the STRING records read, so that a class named by one not read yet
     * is still told (redaction's blind classes). */
    int note_read;
    struct idmap read_ids;
};

struct one_pass {
    struct hprof_visitor base;  /* first: what the names collector calls */
    struct rewrite_ctx ctx;
    struct hprof_shrink_options opt;
    struct hprof_shrink_stats *st;
    struct dump_model model;
    struct redaction redact;
    struct shrink_plan plan;
    struct shrink_chain *chain;
    struct hprof_visitor *head;     /* the chain's first filter */
    struct plan_cursor *cursor;     /* the chain's */

    struct wait_window window;
    struct wait_window long_wait;   /* Bitmaps the window let go before their buffer came */
    struct held_names names;
    int hold_names;
    struct id_table claims;         /* array id -> CLAIM_* */
    struct id_table value_buffers;  /* a buffer that is a String's value too -> its array_keep */
    struct buffer_slots slots;
    struct waiting_twins twins;     /* the buffers among `window`'s WAIT_DECIDE records */
    /* What answers a claim that comes after its array went out (see
     * late_claims()): arrays written whole (a String's, DumpData's or
     * Bitmap's), and the Bitmap buffers written whole or merged; both with
     * the PRIMITIVE_ARRAY_NODATA ones (nothing to keep either way). */
    struct idlog contents_out, buffers_out;
    struct id_pages dumped;         /* this heap dump's objects: one dumped twice is refused */
    struct idmap dumped_odd;        /* ... those whose id is not 8-byte aligned */
    int hold_values;                /* Strings' values wait for keep rules (redaction) */
    struct id_table value_owner;    /* ... by value id: the String's id */
    struct id_table value_covers;   /* ... and what it holds of it, if not all */
    /* ... and the Strings before it that hold the same value (a Java 6
     * substring, a deduplicated JDK String) */
    struct value_owner { uint64_t value, owner, covers; size_t next; } *more_owners;
    size_t n_more_owners, cap_more_owners;
    size_t free_owners;             /* 1 + the first entry given back (linked by next), or 0 */
    struct id_table more_owners_last; /* value -> 1 + its last entry */
    /* Strings whose value left the window before a rule named them: a
     * rule naming one later comes too late for its text */
    struct idfilter values_gone;
    struct idmap device;            /* Strings android.os.Build's statics name */
    /* class id -> 1 + whether a name up its chain was not read when it was
     * resolved (redaction's blind classes), and the walk's scratch */
    struct idmap names_unread;
    const struct class_info **walk;
    size_t cap_walk;
    struct held *gather;            /* the array read in chunks, or NULL */
    unsigned gather_claim;
    uint64_t gather_have;
    uint64_t *blocked;              /* classes with instances waiting */
    size_t n_blocked, cap_blocked;

    int tracking_bitmaps;           /* android.graphics.Bitmap is named */
    int tracking_pins;              /* ... and buffers may merge */
    struct idfilter pins;           /* what objects other than Bitmaps name */
    struct sha256 *sha;
    /* The output can be read again (a file open for reading, pixels written
     * as read): a buffer is told apart by a fingerprint and merged only
     * once the bytes of its twin, read back, are found the same. */
    int confirm_by_reading;
    struct hprof_writer *writer;
    struct hprof_sink *sink;
    /* What the writer writes to: `sink`, or, where that cannot be patched
     * under --redact, `hold` in front of it, which holds the output back
     * while names wait to take their texts over their fillers. */
    struct hprof_sink *out;
    struct hprof_sink *hold;
    uint8_t *compare_buf;
    struct merge_entry *merges;
    size_t n_merges, cap_merges;
    struct idmap merge_index;       /* 64 bits of type, length, digest -> merges[] */
    struct idmap buffer_sizes;      /* type and length of every buffer kept (set) */
    struct held *gather_objects;    /* a byte[][] read in chunks, to wait, or NULL */
    int buffers_array;              /* the object array read is DumpData.buffers */
    int dropping_array;             /* ... is in a dropped heap */

    struct hprof_segment seg;       /* the segment open, or the last */
    int in_segment;
    uint32_t in_heap;               /* the heap the input is in */
    uint32_t out_heap;              /* the heap the writer's segment is in */
    struct heap_name heap_names[ONE_PASS_HEAPS];
    unsigned n_heap_names;
    uint64_t heap_infos_in;         /* HEAP_DUMP_INFO records read */

    struct one_pass_spill spill;
    struct one_pass_system *system; /* NULL unless zygote and image objects go */
    /* one_pass_prelude.c: a heap dump before its first object */
    int prelude;                    /* its records are held */
    int heap_open;                  /* past it: names used now come too late */
    int prelude_seg;                /* `seg` is a segment begun but not yet written */
    struct held_sub *prelude_first, **prelude_tail;
    uint64_t prelude_bytes;
};

extern const struct hprof_visitor_ops one_pass_ops;

/* one_pass_out.c: what goes down the chain, and the plan's growing parts.
 * The writer's segment is in heap `heap` from here. */
int one_pass_switch_heap(struct one_pass *op, uint32_t heap);
/* The chain's verdict on array `a`, given before it goes in.
 * @return HPROF_OK or HPROF_ERR_NOMEM (reported). */
int one_pass_give_verdict(struct one_pass *op, const struct hprof_primitive_array *a,
                          enum array_keep keep);
/* Array `id` went out with verdict `keep` (a NODATA one: `nodata`), for the
 * claims that come after it.  @return HPROF_OK or HPROF_ERR_NOMEM (reported). */
int one_pass_note_out(struct one_pass *op, uint64_t id, enum array_keep keep, int nodata);
int one_pass_send_instance(struct one_pass *op, const struct hprof_instance *o, uint32_t heap);
/* one_pass_checks.c: object `id`, dumped at `offset` by a sub-record
 * `subtag`, refused (HPROF_ERR_FORMAT) if its heap dump dumped it already. */
int one_pass_dumped_once(struct one_pass *op, uint64_t id, uint64_t offset, uint8_t subtag);
/* Whether this heap dump dumped object `id` already, as far as its ids
 * are held (not past their limits). */
int one_pass_dumped_already(const struct one_pass *op, uint64_t id);
/* The ids of a heap dump: none yet (init, and again for the next heap
 * dump: reset), and their storage given back (free).  @return HPROF_OK or
 * HPROF_ERR_NOMEM. */
int one_pass_checks_init(struct one_pass *op);
int one_pass_checks_reset(struct one_pass *op);
void one_pass_checks_free(struct one_pass *op);
int one_pass_send_array(struct one_pass *op, const struct hprof_primitive_array *a,
                        uint32_t heap, enum array_keep keep);
int one_pass_class_ready(struct one_pass *op, struct class_info *ci, int *rc);
int one_pass_redacting(const struct one_pass *op);
/* The plan reads redaction's maps where the module grows them. */
void one_pass_sync_redact_plan(struct one_pass *op);
int one_pass_redact_string(struct one_pass *op, const struct hprof_string *s);
int one_pass_redact_class(struct one_pass *op, struct class_info *ci);
int one_pass_redact_instance(struct one_pass *op, const struct hprof_instance *o);
int one_pass_exempt_value(struct one_pass *op, uint64_t string_id, uint64_t value,
                          uint64_t covers);
/* `value` is the text of one of the device's Strings: not redacted. */
int one_pass_keep_device_text(struct one_pass *op, uint64_t value);

static inline int one_pass_quiet_skip(int rc)
{
    return rc == HPROF_SKIP ? HPROF_OK : rc;
}

/* Bring the writer back to the heap the input is in, before a record read
 * now goes out. */
static inline int one_pass_live_heap(struct one_pass *op)
{
    return op->out_heap == op->in_heap ? HPROF_OK : one_pass_switch_heap(op, op->in_heap);
}

/* one_pass_claims.c: the window at work. */
int one_pass_send_held(struct one_pass *op, struct held *h, enum array_keep keep);
struct held *one_pass_instance_copy(struct one_pass *op, const struct hprof_instance *o);
/* The oldest record leaves the window (`evicted`: because it is full). */
int one_pass_leave_window(struct one_pass *op, int evicted);
int one_pass_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a);
int one_pass_claim(struct one_pass *op, uint64_t id, unsigned claim);
/* String `owner` holds `value` (`covers` of it, model_string_covers()),
 * which waits for the keep rules: remembered with the others that hold
 * it, each looked at when the value leaves. */
/* Another String noted as holding value `id`, which waits: what the note
 * costs counts in the window, so that a value thousands of Strings share
 * (G1's String deduplication) leaves it by the rule rather than keep their
 * notes in memory without bound.  @return as one_pass_hold(). */
int one_pass_charge_owner(struct one_pass *op, uint64_t id);
int one_pass_note_value_owner(struct one_pass *op, uint64_t value, uint64_t owner,
                              uint64_t covers);
int one_pass_value_owners_init(struct one_pass *op);
void one_pass_value_owners_free(struct one_pass *op);
/* redaction's on_exempt, with the struct one_pass as `ctx`: a rule names
 * String `string_id` for the first time; counted late if its value left
 * the window with its text redacted. */
void one_pass_string_named(void *ctx, uint64_t string_id);
/* Element `index` of the array of buffers being claimed names buffer
 * `id`, not read yet or not decided: claimed, to merge as any other
 * buffer where the output can be patched; where it cannot, pinned. */
int one_pass_claim_later_buffer(struct one_pass *op, uint64_t id, uint32_t index);
/* The array of buffers `array_id` went out: where its pending elements
 * are (or, where the writer cannot say, the buffers stay as they are). */
int one_pass_slots_place(struct one_pass *op, uint64_t array_id);
void one_pass_slots_free(struct one_pass *op);
int one_pass_hold(struct one_pass *op, struct held *h, uint64_t key, uint8_t wait);
int one_pass_pin_buffer(struct one_pass *op, uint64_t id);
/* Array `id`, waiting in the window for a claim, is a buffer that stays
 * (named by an array going out in chunks): it waits on as one, and
 * nothing is sent. */
int one_pass_pin_waiting(struct one_pass *op, uint64_t id);
/* one_pass_twins.c: buffer `h`, claimed, waits in the window (_add) or
 * leaves it (_remove, by id); _earlier gives the first read of those
 * waiting with the bytes of buffer `a` (whose fingerprint64() is `print`)
 * and read before it, or NULL. */
int one_pass_twins_add(struct one_pass *op, const struct held *h);
void one_pass_twins_remove(struct one_pass *op, uint64_t id);
struct held *one_pass_twins_earlier(struct one_pass *op, const struct hprof_primitive_array *a,
                                    uint64_t print);
void one_pass_twins_free(struct one_pass *op);
/* The heap dump ends: the Bitmaps waiting apart go as they are. */
int one_pass_long_wait_end(struct one_pass *op);
/* The heap dump ends: the arrays set aside go (the values that waited for
 * keep rules exempt as these say). */
int one_pass_claims_end(struct one_pass *op);
void one_pass_note_ref(struct one_pass *op, uint64_t ref);
int one_pass_block_class(struct one_pass *op, uint64_t class_id);

int one_pass_reset_dump(struct one_pass *op);
void one_pass_start_heap(struct one_pass *op);

/* The filters one_pass.c and one_pass_run.c make. */
#define PINS_BYTES (8u << 20)      /* the pins' filter, for ids its exact part does not hold */
/* ... and its exact part: 4 KiB pages, each a bit per 8 bytes of 256 KiB
 * of heap, up to 64 MiB of them (a heap of 4 GiB). */
#define PINS_EXACT_PAGES ID_PAGES_4GIB_HEAP
/* values_gone: of the Strings a rule names, about 1 in 6,000 is counted
 * late falsely when 2.5 million values left redacted, 1 in 120 at 10
 * million (pages untouched cost nothing). */
#define VALUES_GONE_BYTES (16u << 20)

/* one_pass_spill.c: large arrays waiting for a claim past the window, in
 * the output file.  _held and _begin (the first chunk; the others go to
 * _chunk while `spill.open`) set an array aside if there is room
 * (*spilled 1), the oldest unclaimed leaving by the rule past the limit;
 * _find gives one still waiting, _read its contents, _send
 * sends it down the chain with a verdict (`data`: its contents, or NULL
 * to read them back); _flush sends those left with their verdicts (as
 * nobody's, unclaimed) when their dump ends. */
int one_pass_spill_init(struct one_pass *op);
void one_pass_spill_free(struct one_pass *op);
int one_pass_spill_held(struct one_pass *op, const struct held *h, int *spilled);
int one_pass_spill_begin(struct one_pass *op, const struct hprof_primitive_array *a,
                         uint64_t bytes, int *spilled);
int one_pass_spill_chunk(struct one_pass *op, const struct hprof_primitive_array *a);
struct spilled *one_pass_spill_find(struct one_pass *op, uint64_t id);
int one_pass_spill_read(struct one_pass *op, const struct spilled *e, uint8_t *buf);
int one_pass_spill_send(struct one_pass *op, struct spilled *e, enum array_keep keep,
                        const uint8_t *data);
int one_pass_spill_pending(const struct one_pass *op);
int one_pass_spill_flush(struct one_pass *op);
/* A new heap dump: nothing waits (after _flush), the scratch area is reused. */
void one_pass_spill_reset(struct one_pass *op);

/* one_pass_names.c: a STRING read; a record about to go out refers to
 * name `id` (a LOAD_CLASS, STACK_FRAME, START_THREAD, CLASS_DUMP or
 * HEAP_DUMP_INFO: the _record and _class_dump calls read their ids); a
 * heap dump's decision point (its first object); its end; the input's. */
int one_pass_names_string(struct one_pass *op, const struct hprof_string *s);
int one_pass_names_use(struct one_pass *op, uint64_t id);
/* Is name `id` one whose STRING has not been read yet (0: it has, or the
 * names are neither held nor noted, and then nobody knows)? */
int one_pass_name_unread(const struct one_pass *op, uint64_t id);
int one_pass_names_record(struct one_pass *op, const struct hprof_record *r);
int one_pass_names_class_dump(struct one_pass *op, const struct hprof_class_dump *cd);
int one_pass_names_decide(struct one_pass *op);
int one_pass_names_after_dump(struct one_pass *op);
int one_pass_names_end(struct one_pass *op);
void one_pass_names_free(struct one_pass *op);

/* one_pass_prelude.c: a heap dump's records before its first object are
 * held (roots, class dumps; segments merged) until that object comes or
 * the dump ends: then its names are written, and they follow. */
int one_pass_prelude_segment(struct one_pass *op, const struct hprof_segment *s);
int one_pass_prelude_root(struct one_pass *op, const struct hprof_root *r);
int one_pass_prelude_class_dump(struct one_pass *op, const struct hprof_class_dump *cd);
int one_pass_prelude_end(struct one_pass *op);
void one_pass_prelude_free(struct one_pass *op);

/* one_pass_system.c: zygote and image objects.  Each returns HPROF_OK
 * when there is nothing to do (the heaps are kept, or the object is not
 * theirs). */
int one_pass_system_init(struct one_pass *op);
void one_pass_system_free(struct one_pass *op);
/* @return ONE_PASS_DROPPED when object `id`, just read, is in a dropped heap. */
int one_pass_system_object(struct one_pass *op, uint64_t id);
int one_pass_system_instance(struct one_pass *op, const struct hprof_instance *o);
int one_pass_system_object_array(struct one_pass *op, const struct hprof_object_array *a);
int one_pass_system_array(struct one_pass *op, const struct hprof_primitive_array *a);
/* A kept object refers to `ref`. */
int one_pass_system_refer(struct one_pass *op, uint64_t ref);
int one_pass_system_tracking(const struct one_pass *op);
int one_pass_system_class_dump(struct one_pass *op, const struct hprof_class_dump *cd);
int one_pass_system_root(struct one_pass *op, const struct hprof_root *r);
/* Something to write when the dump ends (stand-ins, roots)? */
int one_pass_system_pending(const struct one_pass *op);
/* The dump ends: the stand-ins chosen and written, the roots held. */
int one_pass_system_flush(struct one_pass *op);
int one_pass_system_reset(struct one_pass *op);

#endif
