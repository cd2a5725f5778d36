/*
 * testlib.c - see testlib.h.  Test code: aborts on allocation failure.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zlib.h>

#include "testlib.h"

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL) {
        perror("realloc");
        abort();
    }
    return p;
}

void tb_init(struct tbuf *b, unsigned id_size)
{
    memset(b, 0, sizeof *b);
    b->ids = id_size;
}

void tb_free(struct tbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void tb_bytes(struct tbuf *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->data = xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void tb_u1(struct tbuf *b, uint8_t v) { tb_bytes(b, &v, 1); }
void tb_u2(struct tbuf *b, uint16_t v) { uint8_t x[2] = { v >> 8, v }; tb_bytes(b, x, 2); }
void tb_u4(struct tbuf *b, uint32_t v)
{
    uint8_t x[4] = { v >> 24, v >> 16, v >> 8, v };
    tb_bytes(b, x, 4);
}
void tb_u8(struct tbuf *b, uint64_t v)
{
    tb_u4(b, (uint32_t)(v >> 32));
    tb_u4(b, (uint32_t)v);
}
void tb_id(struct tbuf *b, uint64_t id)
{
    if (b->ids == 4)
        tb_u4(b, (uint32_t)id);
    else
        tb_u8(b, id);
}

void tb_header(struct tbuf *b, const char *version)
{
    tb_bytes(b, version, strlen(version) + 1);
    tb_u4(b, b->ids);
    tb_u8(b, 1700000000000ull);
}

void tb_record(struct tbuf *b, uint8_t tag, const void *body, uint32_t len)
{
    tb_u1(b, tag);
    tb_u4(b, 0);
    tb_u4(b, len);
    tb_bytes(b, body, len);
}

void tb_string(struct tbuf *b, uint64_t id, const char *text)
{
    tb_u1(b, HPROF_TAG_STRING);
    tb_u4(b, 0);
    tb_u4(b, (uint32_t)(b->ids + strlen(text)));
    tb_id(b, id);
    tb_bytes(b, text, strlen(text));
}

void tb_load_class(struct tbuf *b, uint32_t serial, uint64_t class_id, uint64_t name_id)
{
    tb_u1(b, HPROF_TAG_LOAD_CLASS);
    tb_u4(b, 0);
    tb_u4(b, 8 + 2 * b->ids);
    tb_u4(b, serial);
    tb_id(b, class_id);
    tb_u4(b, 1);
    tb_id(b, name_id);
}

void tb_segment_begin(struct tbuf *b, uint8_t tag)
{
    tb_u1(b, tag);
    tb_u4(b, 0);
    b->segment_at = b->len;
    tb_u4(b, 0);
}

void tb_segment_end(struct tbuf *b)
{
    uint32_t len = (uint32_t)(b->len - b->segment_at - 4);
    uint8_t *p = b->data + b->segment_at;
    p[0] = len >> 24, p[1] = len >> 16, p[2] = len >> 8, p[3] = len;
}

void tb_class_named(struct tbuf *b, uint64_t id, uint64_t super_id, const uint64_t *names,
                    const uint8_t *types, unsigned n)
{
    tb_u1(b, HPROF_CLASS_DUMP);
    tb_id(b, id);
    tb_u4(b, 1);
    tb_id(b, super_id);
    for (int i = 0; i < 5; i++)
        tb_id(b, 0);
    tb_u4(b, 0);
    tb_u2(b, 0);    /* constants */
    tb_u2(b, 0);    /* statics */
    tb_u2(b, (uint16_t)n);
    for (unsigned i = 0; i < n; i++) {
        tb_id(b, names != NULL ? names[i] : 0x900 + i);
        tb_u1(b, types[i]);
    }
}

void tb_class(struct tbuf *b, uint64_t id, uint64_t super_id, const uint8_t *types, unsigned n)
{
    tb_class_named(b, id, super_id, NULL, types, n);
}

void tb_instance(struct tbuf *b, uint64_t id, uint64_t class_id, const void *values, uint32_t n)
{
    tb_u1(b, HPROF_INSTANCE_DUMP);
    tb_id(b, id);
    tb_u4(b, 1);
    tb_id(b, class_id);
    tb_u4(b, n);
    tb_bytes(b, values, n);
}

void tb_prim_array(struct tbuf *b, uint64_t id, uint8_t type, uint32_t count, const void *data)
{
    tb_u1(b, HPROF_PRIMITIVE_ARRAY_DUMP);
    tb_id(b, id);
    tb_u4(b, 1);
    tb_u4(b, count);
    tb_u1(b, type);
    tb_bytes(b, data, (size_t)count * hprof_type_size(type, b->ids));
}

void tb_small_dump(struct tbuf *b, unsigned id_size)
{
    static const uint8_t types[] = { HPROF_TYPE_INT, HPROF_TYPE_OBJECT };
    uint8_t values[12] = { 0, 0, 0, 42 };
    const char *version = id_size == 4 ? "JAVA PROFILE 1.0.3" : "JAVA PROFILE 1.0.2";
    tb_init(b, id_size);
    tb_header(b, version);
    tb_string(b, 0x10, "Thing");
    tb_load_class(b, 1, 0x100, 0x10);
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(b, HPROF_ROOT_STICKY_CLASS);
    tb_id(b, 0x100);
    tb_class(b, 0x100, 0, types, 2);
    values[4 + id_size - 1] = 0x20; /* field 2 -> array 0x200 */
    values[4 + id_size - 2] = 0x02;
    tb_instance(b, 0x110, 0x100, values, 4 + id_size);
    tb_prim_array(b, 0x200, HPROF_TYPE_CHAR, 3, "\0a\0b\0c");
    tb_segment_end(b);
    tb_record(b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
}

int tl_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int tl_open_reader(const char *path, int *fd, struct hprof_reader **r, struct hprof_error *err)
{
    *fd = -1;
    *r = NULL;
    int rc = hprof_input_open(path, fd, NULL, err);
    if (rc == HPROF_OK)
        rc = hprof_reader_open_fd(r, *fd, err);
    return rc;
}

void tl_close_reader(int fd, struct hprof_reader *r)
{
    hprof_reader_free(r);
    if (fd >= 0)
        close(fd);
}

uint8_t *tl_shrink_file(const char *path, const struct hprof_shrink_options *o, size_t *len,
                        struct hprof_shrink_stats *stats)
{
    return tl_shrink_file_via(path, o, len, stats, 0);
}

uint8_t *tl_shrink_file_via(const char *path, const struct hprof_shrink_options *o, size_t *len,
                            struct hprof_shrink_stats *stats, int mapped)
{
    return tl_shrink_file_by(hprof_shrink, path, o, len, stats, mapped);
}

uint8_t *tl_shrink_file_by(tl_shrink_fn *shrink, const char *path,
                           const struct hprof_shrink_options *o, size_t *len,
                           struct hprof_shrink_stats *stats, int mapped)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    int fd;
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    ck_assert_int_eq(tl_open_reader(path, &fd, &r, &err), HPROF_OK);
    if (mapped)
        ck_assert_int_eq(hprof_reader_map(r), HPROF_OK);
    ck_assert_msg(shrink(r, sink, o, stats, &err) == HPROF_OK, "%s: %s", path, err.message);
    const uint8_t *d = hprof_sink_memory_data(sink, len);
    uint8_t *copy = xrealloc(NULL, *len + 1);
    memcpy(copy, d, *len);
    hprof_sink_free(sink);
    tl_close_reader(fd, r);
    return copy;
}

uint8_t *tl_shrink_file_into_file(const char *path, const struct hprof_shrink_options *o,
                                  size_t *len, struct hprof_shrink_stats *stats)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    int fd;
    char *out = tl_temp_path(".hprof");
    int out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(out_fd, 0);
    struct hprof_sink *sink = hprof_sink_new_fd(out_fd, &err);
    ck_assert_int_eq(tl_open_reader(path, &fd, &r, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_map(r), HPROF_OK);
    ck_assert_msg(hprof_shrink(r, sink, o, stats, &err) == HPROF_OK, "%s: %s", path, err.message);
    ck_assert_int_eq(hprof_sink_finish(sink), HPROF_OK);
    hprof_sink_free(sink);
    tl_close_reader(fd, r);
    close(out_fd);
    uint8_t *bytes = tl_read_file(out, len);
    unlink(out);
    free(out);
    return bytes;
}

int tl_verify_memory(const void *data, size_t len, struct hprof_verify_report *rep,
                     struct hprof_error *err)
{
    struct hprof_reader *r = NULL;
    int rc = hprof_reader_open_memory(&r, data, len, err);
    if (rc == HPROF_OK)
        rc = hprof_verify(r, rep, err);
    hprof_reader_free(r);
    return rc;
}

/* ---- Fixtures ------------------------------------------------------------------ */

const char *const tl_fixtures[TL_N_FIXTURES] = {
    "fixtures/android-synth.hprof.gz",
    "fixtures/hotspot-synth.hprof.gz",
    "fixtures/hotspot-fixture.hprof.gz",
    "../shared/fixtures/art-ahat-test-dump.hprof",
    "../shared/fixtures/hotspot-1.0.2-test1.hprof",
    "../shared/fixtures/hotspot-jdk6-x32-1.0.1.hprof",
};

int tl_fixture_available(int i)
{
    if (i < TL_N_COMMITTED || tl_have_shared_fixtures())
        return 1;
    printf("note: ../shared/fixtures absent, %s not tried\n", tl_fixtures[i]);
    return 0;
}

/* ---- Paths and processes ------------------------------------------------- */

const char *tl_build_dir(void)
{
    const char *b = getenv("HPROF_BUILD");
    return b ? b : "build";
}

char *tl_tool(const char *name)
{
    char *p = xrealloc(NULL, 4096);
    snprintf(p, 4096, "%s/%s", tl_build_dir(), name);
    return p;
}

int tl_have_shared_fixtures(void)
{
    struct stat st;
    return stat("../shared/fixtures", &st) == 0 && S_ISDIR(st.st_mode);
}

char *tl_temp_path(const char *suffix)
{
    static unsigned counter;
    char *p = xrealloc(NULL, 4096);
    const char *dir = getenv("TMPDIR");
    snprintf(p, 4096, "%s/hprof-test-%d-%u%s", dir ? dir : "/tmp", (int)getpid(), counter++,
             suffix);
    return p;
}

char *tl_temp_file(const void *data, size_t len, const char *suffix)
{
    char *path = tl_temp_path(suffix);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

int tl_system(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

uint8_t *tl_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = xrealloc(NULL, (size_t)n + 1);
    *len = fread(data, 1, (size_t)n, f);
    fclose(f);
    return data;
}

uint8_t *tl_read_dump(const char *path, size_t *len)
{
    char *plain = tl_temp_path(".hprof");
    ck_assert_int_eq(tl_system("gzip -dcf %s > %s", path, plain), 0);
    uint8_t *data = tl_read_file(plain, len);
    unlink(plain);
    free(plain);
    ck_assert_ptr_nonnull(data);
    return data;
}

long long tl_manifest(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char k[128];
    long long v;
    if (f == NULL)
        return -1;
    while (fscanf(f, "%127s %lld", k, &v) == 2)
        if (strcmp(k, key) == 0) {
            fclose(f);
            return v;
        }
    fclose(f);
    return -1;
}

/* ---- Canonical digest ------------------------------------------------------ */

struct canon {
    struct hprof_visitor base;
    EVP_MD_CTX *md;
    struct tl_canon *out;
    uint32_t heap;
    uint64_t heap_name;
    unsigned ids;
};

static void feed(struct canon *c, const void *p, size_t n)
{
    EVP_DigestUpdate(c->md, p, n);
}

static void feed_u64(struct canon *c, uint64_t v)
{
    feed(c, &v, sizeof v);
}

static int c_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct canon *c = (struct canon *)v;
    c->out->records++;
    feed_u64(c, HPROF_TAG_STRING);
    feed_u64(c, s->id);
    feed_u64(c, s->length);
    feed(c, s->utf8, s->length);
    return HPROF_OK;
}

static int c_load_class(struct hprof_visitor *v, const struct hprof_load_class *l)
{
    struct canon *c = (struct canon *)v;
    c->out->records++;
    uint64_t f[] = { HPROF_TAG_LOAD_CLASS, l->class_serial, l->class_id, l->stack_serial,
                     l->name_id, l->time };
    feed(c, f, sizeof f);
    return HPROF_OK;
}

static int c_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct canon *c = (struct canon *)v;
    if (r->tag == HPROF_TAG_HEAP_DUMP_END)
        return HPROF_OK;
    c->out->records++;
    feed_u64(c, r->tag);
    feed_u64(c, r->time);
    feed_u64(c, r->length);
    feed(c, r->body, r->length);
    return HPROF_OK;
}

static int c_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    (void)s;
    ((struct canon *)v)->heap = 0; /* readers reset the heap per segment */
    ((struct canon *)v)->heap_name = 0;
    return HPROF_OK;
}

static int c_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    struct canon *c = (struct canon *)v;
    c->heap = i->heap_id;
    c->heap_name = i->name_id;
    return HPROF_OK;
}

static void sub(struct canon *c, uint8_t tag, uint64_t id)
{
    c->out->sub_records++;
    feed_u64(c, tag);
    feed_u64(c, c->heap);
    feed_u64(c, c->heap_name);
    feed_u64(c, id);
}

static int c_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct canon *c = (struct canon *)v;
    sub(c, r->tag, r->id);
    uint64_t f[] = { r->jni_ref, r->thread_serial, r->frame };
    feed(c, f, sizeof f);
    return HPROF_OK;
}

static int c_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *d)
{
    struct canon *c = (struct canon *)v;
    sub(c, HPROF_CLASS_DUMP, d->id);
    uint64_t f[] = { d->stack_serial, d->super_id, d->loader_id, d->signers_id,
                     d->protection_domain_id, d->reserved1, d->reserved2, d->instance_size,
                     d->n_constants, d->n_statics, d->n_fields };
    feed(c, f, sizeof f);
    for (unsigned i = 0; i < d->n_constants; i++) {
        uint64_t k[] = { d->constants[i].index, d->constants[i].type, d->constants[i].value };
        feed(c, k, sizeof k);
    }
    for (unsigned i = 0; i < d->n_statics; i++) {
        uint64_t k[] = { d->statics[i].name_id, d->statics[i].type, d->statics[i].value };
        feed(c, k, sizeof k);
    }
    for (unsigned i = 0; i < d->n_fields; i++) {
        uint64_t k[] = { d->fields[i].name_id, d->fields[i].type };
        feed(c, k, sizeof k);
    }
    return HPROF_OK;
}

static int c_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct canon *c = (struct canon *)v;
    sub(c, HPROF_INSTANCE_DUMP, o->id);
    uint64_t f[] = { o->stack_serial, o->class_id, o->length };
    feed(c, f, sizeof f);
    feed(c, o->values, o->length);
    return HPROF_OK;
}

static int c_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct canon *c = (struct canon *)v;
    if (a->first == 0) {
        sub(c, HPROF_OBJECT_ARRAY_DUMP, a->id);
        uint64_t f[] = { a->stack_serial, a->count, a->class_id };
        feed(c, f, sizeof f);
    }
    feed(c, a->elements, (size_t)a->n * c->ids);
    return HPROF_OK;
}

static int c_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct canon *c = (struct canon *)v;
    if (a->first == 0) {
        sub(c, a->tag, a->id);
        uint64_t f[] = { a->stack_serial, a->count, a->type };
        feed(c, f, sizeof f);
    }
    feed(c, a->data, a->length);
    return HPROF_OK;
}

static const struct hprof_visitor_ops canon_ops = {
    .string = c_string, .load_class = c_load_class, .record = c_record,
    .heap_begin = c_heap_begin, .root = c_root, .heap_info = c_heap_info,
    .class_dump = c_class_dump, .instance = c_instance, .object_array = c_object_array,
    .primitive_array = c_primitive_array,
};

static int canon_run(struct hprof_reader *r, struct tl_canon *out)
{
    struct canon c = { .base = { &canon_ops, NULL }, .out = out };
    unsigned len = 16;
    memset(out, 0, sizeof *out);
    c.md = EVP_MD_CTX_new();
    c.ids = hprof_reader_header(r)->id_size;
    EVP_DigestInit_ex(c.md, EVP_md5(), NULL);
    const struct hprof_header *h = hprof_reader_header(r);
    feed(&c, h->version, strlen(h->version));
    feed_u64(&c, h->id_size);
    feed_u64(&c, h->timestamp_ms);
    int rc = hprof_reader_run(r, &c.base);
    EVP_DigestFinal_ex(c.md, out->md5, &len);
    EVP_MD_CTX_free(c.md);
    return rc;
}

int tl_canon_file(const char *path, struct tl_canon *out, struct hprof_error *err)
{
    return tl_canon_file_via(path, out, 0, err);
}

int tl_canon_file_via(const char *path, struct tl_canon *out, int how, struct hprof_error *err)
{
    struct hprof_reader *r;
    int fd;
    int rc = tl_open_reader(path, &fd, &r, err);
    if (rc == HPROF_OK && (how & TL_MAPPED))
        rc = hprof_reader_map(r);
    if (rc == HPROF_OK)
        hprof_reader_set_threads(r, (how & TL_READ_AHEAD) ? 2 : 1);
    if (rc == HPROF_OK)
        rc = canon_run(r, out);
    tl_close_reader(fd, r);
    return rc;
}

int tl_canon_memory(const void *data, size_t len, struct tl_canon *out, struct hprof_error *err)
{
    struct hprof_reader *r = NULL;
    int rc = hprof_reader_open_memory(&r, data, len, err);
    if (rc == HPROF_OK)
        rc = canon_run(r, out);
    hprof_reader_free(r);
    return rc;
}

int tl_roundtrip_memory(const void *data, size_t len, uint32_t segment_limit, uint8_t **out,
                        size_t *out_len, struct hprof_error *err)
{
    struct hprof_reader *r = NULL;
    struct hprof_sink *sink = hprof_sink_new_memory(err);
    struct hprof_writer *w = sink ? hprof_writer_new(sink, err) : NULL;
    int rc = w ? HPROF_OK : err->code;
    if (rc == HPROF_OK && segment_limit)
        rc = hprof_writer_set_segment_limit(w, segment_limit);
    if (rc == HPROF_OK)
        rc = hprof_reader_open_memory(&r, data, len, err);
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, hprof_writer_visitor(w));
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    if (rc == HPROF_OK) {
        const uint8_t *d = hprof_sink_memory_data(sink, out_len);
        *out = xrealloc(NULL, *out_len + 1);
        memcpy(*out, d, *out_len);
    }
    hprof_reader_free(r);
    hprof_writer_free(w);
    hprof_sink_free(sink);
    return rc;
}

/* ---- Counting visitor ------------------------------------------------------- */

#define COUNTER(v) ((struct tl_counter *)(v))

static int count_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    (void)s;
    COUNTER(v)->strings++;
    return HPROF_OK;
}

static int count_load_class(struct hprof_visitor *v, const struct hprof_load_class *l)
{
    (void)l;
    COUNTER(v)->load_classes++;
    return HPROF_OK;
}

static int count_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    COUNTER(v)->segments++;
    COUNTER(v)->last_segment_length = s->length;
    return HPROF_OK;
}

static int count_heap_end(struct hprof_visitor *v, const struct hprof_segment *s)
{
    (void)s;
    COUNTER(v)->segment_ends++;
    return HPROF_OK;
}

static int count_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    COUNTER(v)->roots++;
    COUNTER(v)->roots_of[r->tag]++;
    COUNTER(v)->sub_records++;
    return HPROF_OK;
}

static int count_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    (void)i;
    COUNTER(v)->heap_infos++;
    COUNTER(v)->sub_records++;
    return HPROF_OK;
}

static int count_class(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    (void)c;
    COUNTER(v)->classes++;
    COUNTER(v)->sub_records++;
    return HPROF_OK;
}

static int count_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    (void)o;
    COUNTER(v)->instances++;
    COUNTER(v)->sub_records++;
    return HPROF_OK;
}

static int count_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    if (a->first == 0) {
        COUNTER(v)->object_arrays++;
        COUNTER(v)->sub_records++;
    }
    return HPROF_OK;
}

static int count_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    if (a->first == 0) {
        COUNTER(v)->primitive_arrays++;
        COUNTER(v)->nodata_arrays += a->tag == HPROF_PRIMITIVE_ARRAY_NODATA;
        COUNTER(v)->sub_records++;
    }
    return HPROF_OK;
}

static const struct hprof_visitor_ops counter_ops = {
    .string = count_string, .load_class = count_load_class,
    .heap_begin = count_heap_begin, .heap_end = count_heap_end,
    .root = count_root, .heap_info = count_heap_info, .class_dump = count_class,
    .instance = count_instance, .object_array = count_object_array,
    .primitive_array = count_primitive_array,
};

void tl_counter_init(struct tl_counter *c)
{
    memset(c, 0, sizeof *c);
    c->base.ops = &counter_ops;
}

int tl_count_memory(const void *data, size_t len, struct tl_counter *c, struct hprof_error *err)
{
    struct hprof_reader *r = NULL;
    tl_counter_init(c);
    int rc = hprof_reader_open_memory(&r, data, len, err);
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, &c->base);
    hprof_reader_free(r);
    return rc;
}

long tl_rss_file_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "RssFile: %ld", &kib) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kib;
}

uint8_t *tl_gzip_bytes(const void *data, size_t len, int stored, size_t *out_len)
{
    z_stream z = { 0 };
    ck_assert_int_eq(deflateInit2(&z, stored ? 0 : 6, Z_DEFLATED, 15 + 16, 8,
                                  Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, len) + 64;
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}
