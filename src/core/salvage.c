/*
 * salvage.c - reading a dump cut short (hprof_reader_set_salvage()) as far
 * as it is complete.  Before its first run a salvaging reader reads the
 * record headers, and if the input is cut, the sub-records of the cut heap
 * record up to the last complete one (scan_cut_heap()) and the class dumps
 * of what is kept (a census run, reader.c's salvage_prepare()); every run
 * then stops at the same sub-record and leaves out what would not make a
 * valid dump: classes whose superclass chain is incomplete, their
 * instances, and arrays of a type whose class is missing, unless that
 * array class is rebuilt.
 */
#define _GNU_SOURCE /* SEEK_DATA, SEEK_HOLE */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader_private.h"

/* Bytes at `offset` of the input, mapped or not. */
static int read_at(struct hprof_reader *r, uint64_t offset, uint8_t *dst, size_t len)
{
    return window_read_at(&r->in, offset, dst, len, r->err);
}

/* Where the file's last data ends: past it is a hole, zeros not stored
 * (the copy of a stream ends with one where the input ends in zeros, and
 * a compressed zero bomb makes it as long as it inflates to).  The size,
 * where holes are not told apart or there is no file. */
static uint64_t last_data_end(const struct hprof_reader *r)
{
#ifdef SEEK_HOLE
    int fd = r->in.fd;
    if (fd < 0)
        return r->in.size;
    off_t hole = lseek(fd, (off_t)r->header.length, SEEK_HOLE);
    while (hole >= 0 && (uint64_t)hole < r->in.size) {
        off_t data = lseek(fd, hole, SEEK_DATA);
        if (data < 0)
            return (uint64_t)hole; /* ENXIO: no data after this hole */
        hole = lseek(fd, data, SEEK_HOLE);
    }
#endif
    return r->in.size;
}

/* Where the run of zero bytes that ends the input starts, no earlier than
 * the header's end: read backwards from the last data, not through a
 * hole. */
static int trailing_zeros_start(struct hprof_reader *r, uint64_t *start)
{
    uint8_t buf[64 << 10];
    uint64_t end = last_data_end(r);
    while (end > r->header.length) {
        size_t n = end - r->header.length < sizeof buf ? (size_t)(end - r->header.length)
                                                     : sizeof buf;
        int rc = read_at(r, end - n, buf, n);
        if (rc != HPROF_OK)
            return rc;
        size_t i = n;
        while (i > 0 && buf[i - 1] == 0)
            i--;
        if (i > 0) {
            *start = end - n + i;
            return HPROF_OK;
        }
        end -= n;
    }
    *start = end;
    return HPROF_OK;
}

/* A zero-filled tail (a download preallocated, a writer that crashed after
 * fallocate()) holds no record: tag 0 is not one.  The data ends where a
 * record would start in it, or, when a heap record runs into it (the cut
 * came inside that record, whose sub-records would read as zeros), where
 * the zeros start: the salvage then keeps the sub-records before them.
 * Any other record that runs into the zeros is cut there too (its length
 * may be zeros), except HEAP_DUMP_END, whose time and length are zeros,
 * and a record that ends exactly with the file.  A cut can leave data
 * that ends in zeros too (a zero field, an id 0): zeros from the middle
 * of a record are taken for a fill only from ZERO_FILL_MIN bytes on, as
 * a preallocation makes them; at a record boundary, where no record
 * starts with a zero tag, a record header's worth decides.  Sets r->in.size
 * to where the data ends and r->found.zero_tail. */
#define ZERO_TAIL_MIN 9
#define ZERO_FILL_MIN 256

static int find_zero_tail(struct hprof_reader *r)
{
    uint64_t zeros, pos = r->header.length, end;
    uint8_t h[9];
    if (r->in.size - r->header.length < ZERO_TAIL_MIN)
        return HPROF_OK;
    int rc = read_at(r, r->in.size - 1, h, 1);
    if (rc != HPROF_OK || h[0] != 0)
        return rc;
    if ((rc = trailing_zeros_start(r, &zeros)) != HPROF_OK || r->in.size - zeros < ZERO_TAIL_MIN)
        return rc;
    for (;;) {
        if (pos >= zeros) {
            end = pos;
            break;
        }
        if (r->in.size - pos < sizeof h) {
            if (r->in.size - zeros < ZERO_FILL_MIN)
                return HPROF_OK;
            end = zeros;
            break;
        }
        if ((rc = read_at(r, pos, h, sizeof h)) != HPROF_OK)
            return rc;
        if (!hprof_tag_known(h[0]))
            return HPROF_OK; /* a problem before the zeros: the run reports it */
        uint64_t next = pos + sizeof h + get_u4(h + 5);
        if (next > zeros && next != r->in.size && h[0] != HPROF_TAG_HEAP_DUMP_END) {
            if (r->in.size - zeros < ZERO_FILL_MIN)
                return HPROF_OK; /* a cut that ends in zeros: the usual salvage */
            end = zeros;
            break;
        }
        pos = next;
    }
    if (end < r->in.size) {
        r->found.zero_tail = r->in.size - end;
        r->in.size = end;
    }
    return HPROF_OK;
}

/* The scan only needs the size of each sub-record: arrays are skipped. */
static int scan_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    (void)v;
    (void)a;
    return HPROF_SKIP;
}

static int scan_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    (void)v;
    (void)a;
    return HPROF_SKIP;
}

static const struct hprof_visitor_ops scan_ops = {
    .object_array = scan_object_array,
    .primitive_array = scan_primitive_array,
};

/* The heap record at r->rec_offset, whose body starts at the cursor, runs
 * past the end of the file.  Reads its sub-records without visitors up to
 * the first one the end of the file cuts, and remembers how many bytes of
 * the body the complete ones take (r->cut_*): every pass, and every reader
 * cloned after this one, then reads the record as that long, so all stop
 * at the same sub-record.  A problem other than the end of the file is
 * reported as a normal read would, with its message.  The cursor is put
 * back at the body.  @return HPROF_OK or that error. */
static int scan_cut_heap(struct hprof_reader *r)
{
    struct hprof_visitor scan = { &scan_ops, NULL };
    struct hprof_error scratch = { 0 }, *err = r->err;
    uint64_t body = r->in.pos, next_check = r->next_check;
    struct cut_scan at = { .kept = body, .next_release = body + CHECK_STEP };
    r->err = &scratch;
    r->scanning = 1;
    r->scan_hit_end = 0;
    r->next_check = UINT64_MAX; /* no progress while going ahead of the run */
    r->in_heap = 1;
    int rc = reader_sub_records(r, &scan, r->in.size, &at);
    uint64_t kept = at.kept;
    r->scanning = 0;
    r->err = err;
    r->next_check = next_check;
    r->in_heap = 0;
    if (rc < 0 && !r->scan_hit_end)
        return hprof_error_set(err, scratch.code, "%s", scratch.message);
    r->found.cut_known = 1;
    r->found.cut_record = r->rec_offset;
    r->found.cut_kept = kept - body;
    r->found.cut_subs = at.subs;
    r->found.cut_sub_tag = kept < r->in.size ? r->sub_tag : 0;
    window_reread_from(&r->in, body);
    return HPROF_OK;
}

/* Salvage: the end of the file cuts the header of the record at the
 * cursor.  Nothing of it is kept. */
int salvage_cut_record_header(struct hprof_reader *r)
{
    struct hprof_salvage_report *s = &r->report;
    s->cut = 1;
    s->input_end = r->in.size;
    s->kept_end = r->in.pos;
    s->bytes_lost = r->in.size - r->in.pos;
    s->record_offset = r->in.pos;
    s->record_tag = 0;
    if (r->in.pos < r->in.size && hprof_reader_pread(r, r->in.pos, &s->record_tag, 1) != HPROF_OK)
        return r->err->code;
    s->records_lost = 1;
    return READER_CUT;
}

/* Salvage: the record whose header was just read at r->rec_offset
 * announces `length` bytes and the file ends first.  Any other record is
 * lost whole; a heap record is read up to its last complete sub-record,
 * and its visitors see a segment of that length, begun and ended as
 * usual.  @return READER_CUT, or an error. */
int salvage_cut_record(struct hprof_reader *r, uint32_t time, uint32_t length,
                       struct hprof_visitor *v)
{
    struct hprof_salvage_report *s = &r->report;
    uint64_t body = r->in.pos;
    s->cut = 1;
    s->input_end = r->in.size;
    s->record_offset = r->rec_offset;
    s->record_tag = r->rec_tag;
    s->record_missing = length - (r->in.size - body);
    if (r->rec_tag != HPROF_TAG_HEAP_DUMP && r->rec_tag != HPROF_TAG_HEAP_DUMP_SEGMENT) {
        r->records--;
        s->kept_end = r->rec_offset;
        s->bytes_lost = r->in.size - r->rec_offset;
        s->records_lost = 1;
        return READER_CUT;
    }
    int rc = HPROF_OK;
    if (!r->found.cut_known || r->found.cut_record != r->rec_offset)
        rc = scan_cut_heap(r);
    if (rc != HPROF_OK)
        return rc;
    s->kept_end = body + r->found.cut_kept;
    s->bytes_lost = r->in.size - s->kept_end;
    s->sub_records_kept = r->found.cut_subs;
    s->sub_records_lost = s->bytes_lost > 0;
    s->sub_tag = r->found.cut_sub_tag;
    if (r->selecting != 0 && r->dumps != r->selecting)
        return READER_CUT; /* another heap dump's record: none of it is this run's */
    struct hprof_segment seg = { r->rec_offset, r->rec_tag, time, (uint32_t)r->found.cut_kept };
    rc = reader_read_heap(r, v, &seg);
    return rc == HPROF_OK ? READER_CUT : rc;
}

/* The census of a cut input: each class dump's superclass, and how many
 * instances each class has. */
struct census {
    struct hprof_visitor base;
    struct idmap supers;        /* class id -> superclass id */
    struct idmap instances;     /* class id -> instances */
    /* Primitive arrays name no class: analyzers find the class of each
     * type by its name (VisualVM fails on a type whose class is missing). */
    struct idmap type_names;    /* STRING id of "[B", "byte[]", ... -> type */
    struct idmap type_classes;  /* class id of those names -> type */
    uint64_t arrays[16];        /* primitive arrays by type */
    uint64_t object_class;      /* java.lang.Object, by its LOAD_CLASS */
};

static int census_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    static const char *const names[] = { "[Z", "[C", "[F", "[D", "[B", "[S", "[I", "[J",
        "boolean[]", "char[]", "float[]", "double[]", "byte[]", "short[]", "int[]", "long[]" };
    for (unsigned i = 0; i < 16; i++)
        if (s->length == strlen(names[i]) && memcmp(s->utf8, names[i], s->length) == 0)
            return idmap_put(&((struct census *)v)->type_names, s->id,
                             HPROF_TYPE_BOOLEAN + i % 8);
    if (s->length == 16 && (memcmp(s->utf8, "java.lang.Object", 16) == 0 ||
                            memcmp(s->utf8, "java/lang/Object", 16) == 0))
        return idmap_put(&((struct census *)v)->type_names, s->id, 0);
    return HPROF_OK;
}

static int census_load_class(struct hprof_visitor *v, const struct hprof_load_class *c)
{
    struct census *cs = (struct census *)v;
    uint64_t type;
    if (!idmap_get(&cs->type_names, c->name_id, &type))
        return HPROF_OK;
    if (type == 0) {
        cs->object_class = c->class_id;
        return HPROF_OK;
    }
    return idmap_put(&cs->type_classes, c->class_id, type);
}

static int census_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    ((struct census *)v)->arrays[a->type & 15]++;
    return HPROF_SKIP;
}

static int census_class(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    return idmap_put(&((struct census *)v)->supers, c->id, c->super_id);
}

static int census_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct census *cs = (struct census *)v;
    uint64_t n = 0;
    idmap_get(&cs->instances, o->class_id, &n);
    return idmap_put(&cs->instances, o->class_id, n + 1);
}

static const struct hprof_visitor_ops census_ops = {
    .string = census_string,
    .load_class = census_load_class,
    .class_dump = census_class,
    .instance = census_instance,
    .object_array = scan_object_array,
    .primitive_array = census_primitive_array,
};

/* Does the superclass chain of `id` end within what `supers` holds?  A
 * cycle counts as complete: it is an error of its own, reported later. */
static int chain_complete(const struct idmap *supers, uint64_t id)
{
    for (size_t steps = 0; steps <= supers->count; steps++) {
        uint64_t super;
        if (!idmap_get(supers, id, &super))
            return 0;   /* never arrived */
        if (super == 0)
            return 1;
        id = super;
    }
    return 1;
}

void salvage_state_hold(struct salvage_state *sv)
{
    if (sv != NULL)
        atomic_fetch_add(&sv->refs, 1);
}

void salvage_state_release(struct salvage_state *sv)
{
    if (sv != NULL && atomic_fetch_sub(&sv->refs, 1) == 1) {
        idmap_free(&sv->complete);
        free(sv);
    }
}

/* The record headers from the top, read with pread() even when mapped:
 * touching each header in the mapping would map most of an ART dump (a
 * segment every few KiB).  Is the input cut (a record runs past its end,
 * or a run of segments is left open)?  A heap record cut is scanned
 * (scan_cut_heap()).  An input that ends between two records with no heap
 * dump, after nothing but what runtimes write before one
 * (hprof_tag_before_heap()), is cut before its heap dump
 * (r->found.cut_before_heap): a complete one would hold it.
 * *first_heap: the first heap record's offset, or 0. */
static int find_cut(struct hprof_reader *r, int *cut, uint64_t *first_heap)
{
    uint64_t pos = r->header.length, open_run = 0;
    int prelude_only = 1;
    *cut = 0;
    *first_heap = 0;
    while (pos < r->in.size) {
        uint8_t h[9];
        if (r->in.size - pos < sizeof h) {
            *cut = 1;
            return HPROF_OK;
        }
        int rc = read_at(r, pos, h, sizeof h);
        if (rc != HPROF_OK)
            return rc;
        uint32_t length = get_u4(h + 5);
        int heap = h[0] == HPROF_TAG_HEAP_DUMP || h[0] == HPROF_TAG_HEAP_DUMP_SEGMENT;
        prelude_only &= hprof_tag_before_heap(h[0]);
        if (heap && *first_heap == 0)
            *first_heap = pos;
        if (h[0] == HPROF_TAG_HEAP_DUMP_SEGMENT && open_run == 0)
            open_run = pos + 1;
        else if (h[0] == HPROF_TAG_HEAP_DUMP_END)
            open_run = 0;
        if (length <= r->in.size - pos - sizeof h) {
            pos += sizeof h + length;
            continue;
        }
        *cut = 1;
        if (!heap)
            return HPROF_OK;
        r->rec_offset = pos;
        r->rec_tag = h[0];
        window_seek(&r->in, pos + sizeof h);
        return scan_cut_heap(r);
    }
    *cut = open_run != 0;
    r->found.cut_before_heap = prelude_only && pos > r->header.length;
    return HPROF_OK;
}

void salvage_census_free(struct census *cs)
{
    if (cs == NULL)
        return;
    idmap_free(&cs->supers);
    idmap_free(&cs->instances);
    idmap_free(&cs->type_names);
    idmap_free(&cs->type_classes);
    free(cs);
}

/* The classes whose superclass chain is complete, and what is dropped. */
static int keep_complete_classes(struct hprof_reader *r, const struct census *cs,
                                 struct salvage_state *sv)
{
    for (size_t i = 0; i <= cs->supers.mask; i++) {
        uint64_t id = cs->supers.keys[i];
        if (id == 0)
            continue;
        if (!chain_complete(&cs->supers, id))
            sv->classes_dropped++;
        else if (idmap_put(&sv->complete, id, 0) != HPROF_OK)
            return hprof_error_set(r->err, HPROF_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i <= cs->instances.mask; i++)
        if (cs->instances.keys[i] != 0 && !idmap_has(&sv->complete, cs->instances.keys[i]))
            sv->instances_dropped += cs->instances.values[i];
    return HPROF_OK;
}

/* A type whose array class is named but not delivered: rebuilt first in
 * the first heap record if there is one, else its arrays go.  One named
 * nowhere is left alone (nothing says it is missing). */
static int rebuild_array_classes(struct hprof_reader *r, const struct census *cs,
                                 struct salvage_state *sv, uint64_t first_heap)
{
    int rc = HPROF_OK;
    sv->first_heap = first_heap;
    uint64_t object = idmap_has(&sv->complete, cs->object_class) ? cs->object_class : 0;
    for (size_t i = 0; rc == HPROF_OK && i <= cs->type_classes.mask; i++) {
        uint64_t id = cs->type_classes.keys[i], t = cs->type_classes.values[i];
        if (id == 0 || idmap_has(&sv->complete, id) || cs->arrays[t] == 0)
            continue;
        if (first_heap == 0 || sv->n_rebuilt == 16) {
            sv->drop_types |= 1u << t;
            continue;
        }
        sv->rebuilt[sv->n_rebuilt].id = id;
        sv->rebuilt[sv->n_rebuilt++].super_id = object;
        if (idmap_put(&sv->complete, id, 0) != HPROF_OK)
            rc = hprof_error_set(r->err, HPROF_ERR_NOMEM, "out of memory");
    }
    for (unsigned t = 0; t < 16; t++)
        if (sv->drop_types >> t & 1)
            sv->arrays_dropped += cs->arrays[t];
    return rc;
}

/* Is the input cut (a record runs past its end, or a run of segments is
 * left open)?  Sets where the data ends (find_zero_tail()) and, for a cut
 * heap record, how much of it is kept (scan_cut_heap()). */
int salvage_find_cut(struct hprof_reader *r, int *cut, uint64_t *first_heap)
{
    int rc = find_zero_tail(r);
    return rc != HPROF_OK ? rc : find_cut(r, cut, first_heap);
}

struct census *salvage_census_new(struct hprof_error *err)
{
    struct census *cs = calloc(1, sizeof *cs);
    if (cs != NULL) {
        cs->base.ops = &census_ops;
        if (idmap_init(&cs->supers, 1) == HPROF_OK && idmap_init(&cs->instances, 1) == HPROF_OK &&
            idmap_init(&cs->type_names, 1) == HPROF_OK &&
            idmap_init(&cs->type_classes, 1) == HPROF_OK)
            return cs;
        salvage_census_free(cs);
    }
    hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    return NULL;
}

struct hprof_visitor *salvage_census_visitor(struct census *cs)
{
    return &cs->base;
}

/* What a census found: the classes delivered, and what is dropped or
 * rebuilt, in r->found.sv. */
int salvage_state_from_census(struct hprof_reader *r, const struct census *cs,
                              uint64_t first_heap)
{
    struct salvage_state *sv = calloc(1, sizeof *sv);
    int rc = HPROF_OK;
    if (sv == NULL || idmap_init(&sv->complete, 0) != HPROF_OK)
        rc = hprof_error_set(r->err, HPROF_ERR_NOMEM, "out of memory");
    else
        atomic_init(&sv->refs, 1);
    if (rc == HPROF_OK)
        rc = keep_complete_classes(r, cs, sv);
    if (rc == HPROF_OK)
        rc = rebuild_array_classes(r, cs, sv, first_heap);
    if (rc == HPROF_OK) {
        r->found.sv = sv;
        return HPROF_OK;
    }
    if (sv != NULL) {
        idmap_free(&sv->complete);
        free(sv);
    }
    return rc;
}

void hprof_reader_set_salvage(struct hprof_reader *r, int on)
{
    r->set.salvage = on;
}

const struct hprof_salvage_report *hprof_reader_salvage_report(const struct hprof_reader *r)
{
    return &r->report;
}

void reader_copy_salvage_report(struct hprof_reader *to, const struct hprof_reader *from)
{
    to->report = from->report;
    to->ended_before_heap = from->ended_before_heap;
}

