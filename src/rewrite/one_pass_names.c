/*
 * one_pass_names.c - the names (STRING records) in a one-pass shrink.
 *
 * Analyzers that read a dump once look a name up when they meet the record
 * that uses it (ahat refuses a name "referenced before definition"), and
 * read a heap dump's segments as one run of sub-records (ahat, VisualVM):
 * every name a heap dump uses must come before it, none between its
 * segments.  So a STRING is held from when it is read until a record
 * refers to it, or until its heap dump's first object, the decision
 * point: every class dump and HEAP_DUMP_INFO before it (one_pass_prelude.c)
 * has said which names it uses, and those are written before the heap
 * dump.  The names still held then are kept where class dumps are still to
 * come: in a dump of JAVA PROFILE 1.0.3 (ART writes class dumps among its
 * objects, and only the names it uses), and in a dump of 4-byte ids that
 * loaded a class (LOAD_CLASS) it has not dumped by then (hprof-conv's
 * 1.0.2 of an ART dump keeps ART's order).  Otherwise they are dropped at
 * the end of the input: HotSpot dumps its classes before the first object
 * and writes its whole symbol table, literals included; its LOAD_CLASS
 * records also name classes not loaded yet, which it does not dump (a
 * dump taken while classes load), and a 64-bit JVM's ids are 8 bytes.  A
 * name a heap dump's record uses after its decision point is written
 * after that heap dump, and counted (window_late): analyzers that read
 * once miss it.
 *
 * Under --redact, a 1.0.3 dump's names still held at the decision point
 * may hold what the multi-pass shrink drops (a name nothing uses) or what
 * it keeps (the field names of the classes ART dumps later, every one of
 * the 3,708 held in the ahat test dump): so each is written with a filler
 * of the same length and stays held (`filled`), and when a record uses it
 * its text goes over its filler.  That takes an output that can be
 * rewritten: a file, or, in front of one that cannot (a pipe, gzip, zstd,
 * memory), a hold (sink_hold.c) that keeps the output back in memory from
 * the fillers on, up to the window's size, until no filler waits for its
 * text.  A name first used past that keeps its filler, counted late; the
 * fillers of the names nothing used are counted (window_names_filled).
 *
 * Past `limit` bytes held, the names wait in the output file's scratch
 * area where it has one (a HotSpot symbol table, string literals and all,
 * can outgrow any window).  Where it has none, the rule: every name held
 * is kept, and every name after it; under --redact, those held are kept
 * with a filler of the same length for their text (a literal may be
 * private; a class or field name so kept reads as asterisks) and the
 * names after them are held again.
 *
 * With --keep-names nothing is held: every name goes out as it comes.
 * Under --redact the ids read are still noted, since which of a class's
 * fields cache the hash of a text is known by their names: a class named
 * by a STRING not read yet goes blind (one_pass_out.c), as where names
 * are held.
 */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "one_pass_private.h"
#include "sink_private.h"

#define NAME_HEAD 16u               /* time u4, id u8, length u4 */

#define NAMES_READ ((size_t)1 << 20)

static int nomem(struct one_pass *op)
{
    return rewrite_nomem(&op->ctx);
}

static struct hprof_string name_in(const uint8_t *p)
{
    return (struct hprof_string){ .time = get_u4(p), .id = get_u8(p + 4),
                                  .length = get_u4(p + 12), .utf8 = p + NAME_HEAD };
}

/* The `n` bytes at place `at` under disk_bytes, read back into `read`:
 * with NAMES_READ bytes more where names are read in order. */
static int read_back(struct one_pass *op, uint64_t at, size_t n, int in_order, const uint8_t **p)
{
    struct held_names *h = &op->names;
    if (at < h->read_at || at + n > h->read_at + h->read_len) {
        size_t want = in_order && n < NAMES_READ ? NAMES_READ : n;
        if (want > h->disk_bytes - at)
            want = (size_t)(h->disk_bytes - at);
        if (want > h->read_cap) {
            uint8_t *grown = realloc(h->read, want);
            if (grown == NULL)
                return nomem(op);
            h->read = grown;
            h->read_cap = want;
        }
        h->read_len = 0;
        int rc = sink_scratch_read(op->sink, NAMES_SCRATCH_AT + at, h->read, want);
        if (rc != HPROF_OK)
            return rc;
        h->read_at = at;
        h->read_len = want;
    }
    *p = h->read + (at - h->read_at);
    return HPROF_OK;
}

/* The name held at place `at`; its text stays where it is until the next
 * call.  `in_order`: the next call is for the name after it. */
static int name_at(struct one_pass *op, uint64_t at, int in_order, struct hprof_string *s)
{
    struct held_names *h = &op->names;
    const uint8_t *p;
    if (at >= h->disk_bytes) {
        *s = name_in(h->bytes + (at - h->disk_bytes));
        return HPROF_OK;
    }
    int rc = read_back(op, at, NAME_HEAD, in_order, &p);
    if (rc == HPROF_OK)
        rc = read_back(op, at, NAME_HEAD + get_u4(p + 12), in_order, &p);
    if (rc == HPROF_OK)
        *s = name_in(p);
    return rc;
}

static int hold(struct one_pass *op, const struct hprof_string *s)
{
    struct held_names *n = &op->names;
    size_t need = n->n_bytes + NAME_HEAD + s->length;
    if (need > n->cap_bytes) {
        size_t cap = n->cap_bytes ? n->cap_bytes : 64u << 10;
        while (cap < need)
            cap *= 2;
        uint8_t *grown = realloc(n->bytes, cap);
        if (grown == NULL)
            return nomem(op);
        n->bytes = grown;
        n->cap_bytes = cap;
    }
    uint8_t *p = n->bytes + n->n_bytes;
    p = put_u4(p, s->time);
    p = put_u8(p, s->id);
    p = put_u4(p, s->length);
    memcpy(p, s->utf8, s->length);
    if (id_table_put(&n->index, s->id, n->disk_bytes + n->n_bytes + 1) != HPROF_OK)
        return nomem(op);
    n->n_bytes = need;
    count_add(&op->st->window_names, s->length);
    return HPROF_OK;
}

/* The names in memory after those in the scratch area.  @return 0 when
 * the file refused them (they stay in memory). */
static int to_disk(struct one_pass *op)
{
    struct held_names *n = &op->names;
    if (sink_scratch_write(op->sink, NAMES_SCRATCH_AT + n->disk_bytes, n->bytes, n->n_bytes) !=
        HPROF_OK)
        return 0;
    n->disk_bytes += n->n_bytes;
    n->n_bytes = 0;
    return 1;
}

/* Calls fn(op, name) for each name still held, in the order read. */
static int visit_held(struct one_pass *op,
                      int (*fn)(struct one_pass *, const struct hprof_string *))
{
    struct held_names *n = &op->names;
    int rc = HPROF_OK;
    for (uint64_t at = 0; rc == HPROF_OK && at < n->disk_bytes + n->n_bytes;) {
        struct hprof_string s;
        if ((rc = name_at(op, at, 1, &s)) != HPROF_OK)
            break;
        /* a name of the null id (jhsdb writes one) is in no index, nothing
         * can use it: it stays held to the end */
        uint64_t *held = id_table_find(&n->index, s.id);
        if (s.id == 0 || (held != NULL && *held == at + 1))
            rc = fn(op, &s);
        at += NAME_HEAD + s.length;
    }
    return rc;
}

/* visit_held(), then the names held are forgotten (those filled with
 * them: their texts can no longer go over their fillers). */
static int each_held(struct one_pass *op, int (*fn)(struct one_pass *, const struct hprof_string *))
{
    struct held_names *n = &op->names;
    int rc = visit_held(op, fn);
    id_table_free(&n->filled);
    if (rc == HPROF_OK && op->hold != NULL)
        rc = sink_hold_release(op->hold);
    if (n->disk_bytes > 0)
        sink_scratch_release(op->sink, NAMES_SCRATCH_AT, n->disk_bytes);
    free(n->bytes);
    free(n->read);
    id_table_free(&n->index);
    n->bytes = n->read = NULL;
    n->n_bytes = n->cap_bytes = n->read_cap = n->read_len = 0;
    n->disk_bytes = n->read_at = 0;
    return rc;
}

static int write_name(struct one_pass *op, const struct hprof_string *s)
{
    return hprof_visit_string(op->head, s);
}

/* At a decision point: written, so in use from now on. */
static int write_kept(struct one_pass *op, const struct hprof_string *s)
{
    if (idmap_put(&op->names.used, s->id, 0) != HPROF_OK)
        return nomem(op);
    return write_name(op, s);
}

/* Name `s`, written with a filler at a decision point, and where its
 * filler is (the output offset of its text, or UINT64_MAX where not
 * known): taken from those filled.  @return 0 when it is not one. */
static int take_filled(struct one_pass *op, const struct hprof_string *s, uint64_t *at)
{
    struct held_names *n = &op->names;
    return n->filled.count > 0 && id_table_take(&n->filled, s->id, at);
}

static int count_dropped(struct one_pass *op, const struct hprof_string *s)
{
    uint64_t at;
    count_add(take_filled(op, s, &at) ? &op->st->window_names_filled : &op->st->names_dropped,
              s->length);
    return HPROF_OK;
}

/* Name `s` written with its length, not its text. */
static int write_filler(struct one_pass *op, const struct hprof_string *s)
{
    uint8_t *fill = malloc(s->length + 1);
    if (fill == NULL)
        return nomem(op);
    memset(fill, '*', s->length);
    struct hprof_string filled = *s;
    filled.utf8 = fill;
    int rc = write_name(op, &filled);
    free(fill);
    return rc;
}

/* The rule's way to keep a name under --redact: its length, not its text;
 * written, it is in use from now on (one a decision point filled is out
 * already, and keeps its filler). */
static int write_filled(struct one_pass *op, const struct hprof_string *s)
{
    uint64_t at;
    if (idmap_put(&op->names.used, s->id, 0) != HPROF_OK)
        return nomem(op);
    return take_filled(op, s, &at) ? HPROF_OK : write_filler(op, s);
}

/* A decision point under --redact: name `s`, not used yet, goes out with
 * a filler and stays held, its text to go over the filler if a record
 * uses it later (unfill()).  One an earlier decision point filled is out
 * already. */
static int fill(struct one_pass *op, const struct hprof_string *s)
{
    struct held_names *n = &op->names;
    if (n->filled.count > 0 && id_table_find(&n->filled, s->id) != NULL)
        return HPROF_OK;
    uint64_t before = hprof_sink_bytes(op->out);
    int rc = write_filler(op, s);
    uint64_t after = hprof_sink_bytes(op->out);
    /* the writer's STRING record ends with the text, unless a filter
     * changed it: then where the text is is not known */
    uint64_t at = after - before == 9u + op->ctx.ids + s->length ? after - s->length : UINT64_MAX;
    if (rc == HPROF_OK && id_table_put(&n->filled, s->id, at) != HPROF_OK)
        rc = nomem(op);
    return rc;
}

/* Name `s`, filled at a decision point (its filler at output offset
 * `at`), is used: its text goes over the filler while the output can take
 * it (a file that can be patched, or bytes still held back); else the
 * name reads as its filler, which analyzers show, counted late.  With no
 * filler left to write over, what is held back goes on. */
static int unfill(struct one_pass *op, const struct hprof_string *s, uint64_t at)
{
    int rc = HPROF_OK, done = s->length == 0;
    if (!done && at != UINT64_MAX && sink_can_patch(op->out)) {
        rc = sink_patch(op->out, at, s->utf8, s->length);
        done = rc == HPROF_OK;
    } else if (!done && at != UINT64_MAX && op->hold != NULL) {
        done = sink_hold_patch(op->hold, at, s->utf8, s->length);
    }
    if (rc == HPROF_OK && !done)
        op->st->window_late++;
    if (rc == HPROF_OK && op->hold != NULL && op->names.filled.count == 0)
        rc = sink_hold_release(op->hold);
    return rc;
}

/* A name held at the end of the input, in a dump that used no name: it is
 * kept, as the multi-pass shrink keeps them all, with its text. */
static int keep_unused(struct one_pass *op, const struct hprof_string *s)
{
    uint64_t at;
    return take_filled(op, s, &at) ? unfill(op, s, at) : write_name(op, s);
}

int one_pass_names_string(struct one_pass *op, const struct hprof_string *s)
{
    struct held_names *n = &op->names;
    uint64_t unused;
    if (n->unread.count > 0)
        id_table_take(&n->unread, s->id, &unused);
    if (n->note_read && idmap_put(&n->read_ids, s->id, 0) != HPROF_OK)
        return nomem(op);
    if (!op->hold_names || idmap_has(&n->used, s->id))
        return hprof_visit_string(op->head, s);
    int rc = hold(op, s);
    if (rc != HPROF_OK || n->n_bytes <= n->limit || (n->to_disk && to_disk(op)))
        return rc;
    count_add(&op->st->window_by_rule, n->disk_bytes + n->n_bytes);
    /* kept where the multi-pass shrink drops the unused, with a filler
     * under --redact where it keeps the used: late, every one */
    op->st->window_late += n->index.count;
    if (op->opt.redact != HPROF_REDACT_NONE) /* the rule: those held kept as fillers */
        return each_held(op, write_filled);
    op->hold_names = 0; /* the rule: every name held is kept, and every name from here */
    return each_held(op, write_name);
}

int one_pass_names_use(struct one_pass *op, uint64_t id)
{
    struct held_names *n = &op->names;
    uint64_t at;
    if (!op->hold_names || id == 0 || idmap_has(&n->used, id))
        return HPROF_OK;
    if (idmap_put(&n->used, id, 0) != HPROF_OK)
        return nomem(op);
    if (!id_table_take(&n->index, id, &at)) { /* not read yet: written as it comes */
        op->st->window_late += op->heap_open;
        return id_table_put(&n->unread, id, 1) == HPROF_OK ? HPROF_OK : nomem(op);
    }
    struct hprof_string s;
    uint64_t filler;
    int rc = name_at(op, at - 1, 0, &s);
    if (rc == HPROF_OK && take_filled(op, &s, &filler))
        return unfill(op, &s, filler);
    if (rc != HPROF_OK || !op->heap_open)
        return rc == HPROF_OK ? write_name(op, &s) : rc;
    /* inside a heap dump past its decision point: after it, a copy of its
     * own (the rule may give back the storage of those held meanwhile) */
    uint8_t *after = grow_array(n->after, &n->cap_after, n->n_after + NAME_HEAD + s.length, 1);
    if (after == NULL)
        return nomem(op);
    n->after = after;
    uint8_t *p = put_u4(after + n->n_after, s.time);
    p = put_u8(p, s.id);
    p = put_u4(p, s.length);
    memcpy(p, s.utf8, s.length);
    n->n_after += NAME_HEAD + s.length;
    op->st->window_late++;
    return HPROF_OK;
}

int one_pass_name_unread(const struct one_pass *op, uint64_t id)
{
    const struct held_names *n = &op->names;
    if (id == 0)
        return 0;
    if (n->note_read)
        return !idmap_has(&n->read_ids, id);
    if (!op->hold_names || id_table_find(&n->index, id) != NULL)
        return 0; /* held: read */
    return !idmap_has(&n->used, id) || id_table_find(&n->unread, id) != NULL;
}

int one_pass_names_record(struct one_pass *op, const struct hprof_record *r)
{
    uint64_t ids[3];
    unsigned n;
    int rc = names_of_record(r, op->ctx.ids, ids, &n, op->ctx.err);
    for (unsigned i = 0; rc == HPROF_OK && i < n; i++)
        rc = one_pass_names_use(op, ids[i]);
    return rc;
}

int one_pass_names_class_dump(struct one_pass *op, const struct hprof_class_dump *cd)
{
    int rc = HPROF_OK;
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_statics; i++)
        rc = one_pass_names_use(op, cd->statics[i].name_id);
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_fields; i++)
        rc = one_pass_names_use(op, cd->fields[i].name_id);
    return rc;
}

/* At a decision point: whether class dumps, and the names they use, may
 * come after it (see the top of this file).  Class ids are unique, so
 * fewer class dumps than classes loaded means one loaded is not dumped. */
static int class_dumps_to_come(const struct one_pass *op)
{
    return op->names.keep_unused ||
           (op->ctx.ids == 4 && op->model.classes.n_info < op->model.class_names.count);
}

int one_pass_names_decide(struct one_pass *op)
{
    struct held_names *n = &op->names;
    if (!op->hold_names || !class_dumps_to_come(op))
        return HPROF_OK;
    if (op->opt.redact == HPROF_REDACT_NONE)
        return each_held(op, write_kept);
    if (n->index.count == n->filled.count)
        return HPROF_OK; /* nothing held but what is filled already */
    /* where the output cannot be patched, it is held back from the
     * fillers on, as much as the window */
    int rc = op->hold != NULL ? sink_hold_start(op->hold, op->window.limit) : HPROF_OK;
    return rc == HPROF_OK ? visit_held(op, fill) : rc;
}

int one_pass_names_after_dump(struct one_pass *op)
{
    struct held_names *n = &op->names;
    int rc = HPROF_OK;
    for (size_t at = 0; rc == HPROF_OK && at < n->n_after;) {
        struct hprof_string s = name_in(n->after + at);
        rc = write_name(op, &s);
        at += NAME_HEAD + s.length;
    }
    n->n_after = 0;
    return rc;
}

/* The input ended: what nothing referred to is dropped.  A dump that uses
 * no name at all keeps them, as the multi-pass shrink does: dropping every
 * one could leave no record, which is not a valid dump. */
int one_pass_names_end(struct one_pass *op)
{
    if (op->hold_names && op->names.used.count == 0)
        return each_held(op, keep_unused);
    return each_held(op, count_dropped);
}

void one_pass_names_free(struct one_pass *op)
{
    struct held_names *n = &op->names;
    free(n->bytes);
    free(n->read);
    free(n->after);
    id_table_free(&n->index);
    id_table_free(&n->unread);
    id_table_free(&n->filled);
    idmap_free(&n->used);
    idmap_free(&n->read_ids);
    memset(n, 0, sizeof *n);
}
