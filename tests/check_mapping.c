/*
 * check_mapping.c - ProGuard/R8 mapping files (src/common/mapping.c): every
 * line form is parsed, classes are found in both spellings and as arrays,
 * fields and methods by their class, overloads by the documented rule, and a
 * malformed line is an error naming the file and the line.  The ART
 * fixture's map (../shared/fixtures) is read when that folder exists.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mapping.h"
#include "testlib.h"

#define ART_MAP "../shared/fixtures/art-ahat-test-dump.map"

static struct hprof_mapping *parse(const char *text)
{
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    int rc = mapping_parse(text, strlen(text), "test.map", &m, &err);
    ck_assert_msg(rc == HPROF_OK, "%s", err.message);
    ck_assert_ptr_nonnull(m);
    return m;
}

#define S(x) (x), strlen(x)

static const char hand_made[] =
    "# compiler: R8\n"
    "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.2\"}\n"
    "\n"
    "com.example.Outer -> a.b:\n"
    "# {\"id\":\"sourceFile\",\"fileName\":\"Outer.java\"}\n"
    "    int count -> a\n"
    "    java.lang.String[] names -> b\n"
    "      # {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"La;\"}\n"
    "    void run() -> c\n"
    "    1:3:void start(int,java.lang.String):10:12 -> d\n"
    "    4:4:void stop():20 -> e\n"
    "\t\n"
    "com.example.Outer$Inner -> a.b$a:\n"
    "    com.example.Outer this$0 -> a\n"
    "    long when -> b\n"
    "com.example.Plain -> com.example.Plain:\n"
    "    int kept -> kept\n";

START_TEST(mapping_reads_classes_fields_and_methods_in_every_form)
{
    struct hprof_mapping *m = parse(hand_made);
    ck_assert_uint_eq(mapping_n_classes(m), 3);
    ck_assert_uint_eq(mapping_n_members(m), 8);
    ck_assert_str_eq(mapping_class(m, S("a.b")), "com.example.Outer");
    ck_assert_str_eq(mapping_class(m, S("a.b$a")), "com.example.Outer$Inner");
    ck_assert_str_eq(mapping_class(m, S("com.example.Plain")), "com.example.Plain");
    ck_assert_str_eq(mapping_field(m, S("a.b"), S("a")), "count");
    ck_assert_str_eq(mapping_field(m, S("a.b"), S("b")), "names");
    ck_assert_str_eq(mapping_field(m, S("a.b$a"), S("a")), "this$0");
    ck_assert_str_eq(mapping_field(m, S("a.b$a"), S("b")), "when");
    ck_assert_str_eq(mapping_method(m, S("a.b"), S("c"), 0, NULL), "run");
    ck_assert_str_eq(mapping_method(m, S("a.b"), S("d"), 2, NULL), "start");
    ck_assert_str_eq(mapping_method(m, S("a.b"), S("e"), 0, NULL), "stop");
    /* a field is not a method, nor the other way round */
    ck_assert_ptr_null(mapping_method(m, S("a.b"), S("a"), 0, NULL));
    ck_assert_ptr_null(mapping_field(m, S("a.b"), S("c")));
    /* members belong to their class: b's fields are not b$a's */
    ck_assert_ptr_null(mapping_field(m, S("a.b$a"), S("c")));
    /* what the mapping does not know */
    ck_assert_ptr_null(mapping_class(m, S("a.c")));
    ck_assert_ptr_null(mapping_class(m, S("a")));
    ck_assert_ptr_null(mapping_class(m, S("a.b$b")));   /* an inner class not listed */
    ck_assert_ptr_null(mapping_field(m, S("a.c"), S("a")));
    ck_assert_ptr_null(mapping_field(m, S("a.b"), S("z")));
    mapping_free(m);
}
END_TEST

/* Names come from a dump's STRING records: not NUL-terminated. */
START_TEST(mapping_lookups_take_names_that_are_not_nul_terminated)
{
    struct hprof_mapping *m = parse(hand_made);
    const char buf[] = "a.b$axyz";
    ck_assert_str_eq(mapping_class(m, buf, 3), "com.example.Outer");
    ck_assert_str_eq(mapping_class(m, buf, 5), "com.example.Outer$Inner");
    ck_assert_str_eq(mapping_field(m, buf, 3, "ab", 1), "count");
    mapping_free(m);
}
END_TEST

/* HotSpot spells classes with slashes, Android with dots: both find it, and
 * mapping_class_name() answers in the spelling it was asked in, arrays
 * included; primitive arrays and unknown classes are not mapped. */
START_TEST(mapping_finds_classes_in_both_spellings_and_as_arrays)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        { "a.b", "com.example.Outer" },
        { "a/b", "com/example/Outer" },
        { "a/b$a", "com/example/Outer$Inner" },
        { "a.b[]", "com.example.Outer[]" },
        { "a.b$a[][]", "com.example.Outer$Inner[][]" },
        { "[La/b;", "[Lcom/example/Outer;" },
        { "[[La/b$a;", "[[Lcom/example/Outer$Inner;" },
        { "[I", NULL },
        { "int[]", NULL },
        { "[[J", NULL },
        { "a.c[]", NULL },
        { "[La/c;", NULL },
        { "[La/b", NULL },
        { "", NULL },
    };
    struct hprof_mapping *m = parse(hand_made);
    ck_assert_str_eq(mapping_class(m, S("a/b$a")), "com.example.Outer$Inner");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        memset(out, 'x', sizeof out);
        size_t n = mapping_class_name(m, S(cases[i].in), '/', out, sizeof out);
        if (cases[i].out == NULL) {
            ck_assert_msg(n == 0, "%s mapped to %.*s", cases[i].in, (int)n, out);
            continue;
        }
        ck_assert_uint_eq(n, strlen(cases[i].out));
        ck_assert_str_eq(out, cases[i].out);
    }
    /* a buffer too small: the length needed, nothing written past it */
    char small[8];
    memset(small, 'x', sizeof small);
    ck_assert_uint_eq(mapping_class_name(m, S("[La/b;"), '/', small, 4), strlen("[Lcom/example/Outer;"));
    ck_assert_mem_eq(small, "[Lcoxxxx", 8);
    mapping_free(m);
}
END_TEST

/* R8's metadata lines are comments, indented or not; CRLF line ends and a
 * last line without '\n' are read as any other. */
START_TEST(mapping_skips_comments_metadata_blank_lines_and_carriage_returns)
{
    struct hprof_mapping *m = parse("# only a comment\r\n"
                              "   # {\"id\":\"com.android.tools.r8.synthesized\"}\r\n"
                              "\r\n"
                              "x.Y -> a:\r\n"
                              "    # {\"id\":\"x\"} -> not a member\r\n"
                              "    int f -> b\r\n"
                              "    void g():3:3 -> c");
    ck_assert_uint_eq(mapping_n_classes(m), 1);
    ck_assert_uint_eq(mapping_n_members(m), 2);
    ck_assert_str_eq(mapping_class(m, S("a")), "x.Y");
    ck_assert_str_eq(mapping_field(m, S("a"), S("b")), "f");
    ck_assert_str_eq(mapping_method(m, S("a"), S("c"), 0, NULL), "g");
    mapping_free(m);
    m = parse("");
    ck_assert_uint_eq(mapping_n_classes(m), 0);
    ck_assert_ptr_null(mapping_class(m, S("a")));
    ck_assert_ptr_null(mapping_method(m, S("a"), S("b"), 1, NULL));
    mapping_free(m);
}
END_TEST

/* One malformed line per case, on line 3 after a good class and member. */
static const struct {
    const char *line, *why;
} bad[] = {
    { "x.Z a:", "no ' -> '" },
    { "x.Z -> a", "ends with ':'" },
    { "x Z -> a:", "class names" },
    { "x.Z -> :", "class names" },
    { "    int f ->", "no ' -> '" },
    { "    int -> a", "'type name -> obf'" },
    { "    int f -> ", "obfuscated name" },
    { "    int f -> a b", "obfuscated name" },
    { "    1:void m() -> a", "line range" },
    { "    1:x:void m() -> a", "line range" },
    { "    5:3:void m() -> a", "line range" },
    { "    void m( -> a", "no ')'" },
    { "    void m():x -> a", "original line numbers" },
    { "    void m():1:2:3 -> a", "original line numbers" },
    { "    1:2:int f -> a", "a field with line numbers" },
    { "    void x.() -> a", "member name" },
};

START_TEST(mapping_rejects_a_malformed_line_naming_file_and_line)
{
    char text[256];
    snprintf(text, sizeof text, "x.Y -> b:\n    int f -> a\n%s\nx.W -> c:\n", bad[_i].line);
    struct hprof_mapping *m = (struct hprof_mapping *)1;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(mapping_parse(text, strlen(text), "app/mapping.txt", &m, &err),
                     HPROF_ERR_FORMAT);
    ck_assert_ptr_null(m);
    ck_assert_msg(strncmp(err.message, "app/mapping.txt:3: malformed mapping line", 41) == 0,
                  "%s", err.message);
    ck_assert_msg(strstr(err.message, bad[_i].why) != NULL, "%s", err.message);
}
END_TEST

START_TEST(mapping_rejects_members_before_a_class_and_a_class_named_twice)
{
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    const char *orphan = "# header\n    int f -> a\n";
    ck_assert_int_eq(mapping_parse(orphan, strlen(orphan), "m.txt", &m, &err), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message,
                     "m.txt:2: malformed mapping line (a member before any class):     int f -> a");
    memset(&err, 0, sizeof err);
    const char *twice = "x.A -> a:\nx.B -> b:\nx.C -> a:\n";
    ck_assert_int_eq(mapping_parse(twice, strlen(twice), "m.txt", &m, &err), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message, "m.txt:3: class a is also the obfuscated name of line 1");
}
END_TEST

/* A NUL byte would cut a name short without a word: it is an error. */
START_TEST(mapping_rejects_a_nul_byte)
{
    static const char text[] = "x.Y -> a:\n    int f\0g -> b\n";
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(mapping_parse(text, sizeof text - 1, "m.txt", &m, &err), HPROF_ERR_FORMAT);
    ck_assert_msg(strncmp(err.message, "m.txt:2: malformed mapping line (a NUL byte)", 44) == 0,
                  "%s", err.message);
}
END_TEST

/* A malformed line is shown in the message, its control characters
 * escaped: an escape sequence in it would otherwise reach the terminal. */
START_TEST(mapping_shows_a_malformed_line_with_its_control_characters_escaped)
{
    static const char text[] = "x.Y -> a:\n    bad\033[31mred\tline\n";
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(mapping_parse(text, sizeof text - 1, "m.txt", &m, &err), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message,
                     "m.txt:2: malformed mapping line (no ' -> '):     bad\\x1b[31mred\\x09line");
}
END_TEST

START_TEST(mapping_load_reports_a_file_it_cannot_read)
{
    struct hprof_mapping *m = (struct hprof_mapping *)1;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(mapping_load("/nonexistent/mapping.txt", &m, &err), HPROF_ERR_IO);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.message, "/nonexistent/mapping.txt: No such file or directory");
    char *path = tl_temp_file("x.Y -> a:\n    int f -> b\n", 24, ".map");
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(mapping_load(path, &m, &err), HPROF_OK);
    ck_assert_str_eq(mapping_field(m, S("a"), S("b")), "f");
    mapping_free(m);
    mapping_free(NULL);
    remove(path);
    free(path);
}
END_TEST

/* Overloads renamed alike and R8's inlined lines: the rule of mapping.h. */
static const char overloads[] =
    "x.Y -> a:\n"
    "    void same(int) -> a\n"                       /* rule 1: one name */
    "    void same(long) -> a\n"
    "    void first(int) -> b\n"                      /* rule 3: no lines */
    "    void second(long) -> b\n"
    "    1:3:void x.Util.helper():40:42 -> c\n"       /* inlined into outer */
    "    1:3:void outer():10 -> c\n"
    "    4:9:void other():20:25 -> c\n"
    "    1:5:void x.Util.only():7:11 -> d\n"          /* only foreign lines */
    "    1:5:void x.Util.also():7:11 -> d\n"
    "    1:2:void x.Util.in():1:2 -> e\n"            /* foreign, then own */
    "    3:4:void mine():1:2 -> e\n";

START_TEST(mapping_method_picks_among_overloads_by_its_rule)
{
    struct hprof_mapping *m = parse(overloads);
    int amb = -1;
    ck_assert_str_eq(mapping_method(m, S("a"), S("a"), 0, &amb), "same");
    ck_assert_int_eq(amb, 0);
    ck_assert_str_eq(mapping_method(m, S("a"), S("b"), 0, &amb), "first");
    ck_assert_int_eq(amb, 1);
    ck_assert_str_eq(mapping_method(m, S("a"), S("b"), 7, &amb), "first"); /* no ranges */
    ck_assert_int_eq(amb, 1);
    /* in 1..3 the method of this class, not the one inlined into it */
    ck_assert_str_eq(mapping_method(m, S("a"), S("c"), 2, &amb), "outer");
    ck_assert_int_eq(amb, 1);
    ck_assert_str_eq(mapping_method(m, S("a"), S("c"), 5, &amb), "other");
    ck_assert_int_eq(amb, 0);
    ck_assert_str_eq(mapping_method(m, S("a"), S("c"), 100, &amb), "outer"); /* out of range */
    ck_assert_int_eq(amb, 1);
    ck_assert_str_eq(mapping_method(m, S("a"), S("c"), 0, &amb), "outer");
    ck_assert_str_eq(mapping_method(m, S("a"), S("d"), 3, &amb), "also"); /* the last */
    ck_assert_str_eq(mapping_method(m, S("a"), S("d"), 0, &amb), "only"); /* the first */
    ck_assert_str_eq(mapping_method(m, S("a"), S("e"), 0, &amb), "mine"); /* own first */
    ck_assert_str_eq(mapping_method(m, S("a"), S("e"), 1, &amb), "in");
    ck_assert_str_eq(mapping_method(m, S("a"), S("e"), -1, NULL), "mine");
    mapping_free(m);
}
END_TEST

/* Many classes with the same member names: every one found, in its class. */
START_TEST(mapping_finds_every_class_and_member_of_a_large_file)
{
    enum { N = 60000 };
    size_t cap = (size_t)N * 96, len = 0;
    char *text = malloc(cap);
    for (unsigned i = 0; i < N; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "com.app.C%u -> o%u:\n    int f%u -> a\n    1:2:void m%u():5:6 -> a\n",
                                i, i, i, i);
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(mapping_parse(text, len, "big.map", &m, &err), HPROF_OK);
    ck_assert_uint_eq(mapping_n_classes(m), N);
    ck_assert_uint_eq(mapping_n_members(m), 2 * N);
    for (unsigned i = 0; i < N; i += 7) {
        char obf[16], want[32];
        snprintf(obf, sizeof obf, "o%u", i);
        snprintf(want, sizeof want, "com.app.C%u", i);
        ck_assert_str_eq(mapping_class(m, S(obf)), want);
        snprintf(want, sizeof want, "f%u", i);
        ck_assert_str_eq(mapping_field(m, S(obf), S("a")), want);
        snprintf(want, sizeof want, "m%u", i);
        ck_assert_str_eq(mapping_method(m, S(obf), S("a"), 1, NULL), want);
    }
    mapping_free(m);
    free(text);
}
END_TEST

/* R8 -repackageclasses '' leaves classes without a package: `a` shows no
 * form of its own, and takes the dump's (slashes in HotSpot's, dots in
 * Android's); a JVM array is HotSpot's form whatever the dump says. */
START_TEST(mapping_class_name_gives_a_class_without_package_the_dumps_form)
{
    struct hprof_mapping *m = parse("com.example.Alpha -> a:\n    int count -> a\n");
    static const struct {
        const char *in;
        char separator;
        const char *out;
    } cases[] = {
        { "a", '/', "com/example/Alpha" },
        { "a", '.', "com.example.Alpha" },
        { "[La;", '/', "[Lcom/example/Alpha;" },
        { "[[La;", '.', "[[Lcom/example/Alpha;" },
        { "a[]", '.', "com.example.Alpha[]" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        size_t n = mapping_class_name(m, S(cases[i].in), cases[i].separator, out, sizeof out);
        ck_assert_uint_eq(n, strlen(cases[i].out));
        ck_assert_str_eq(out, cases[i].out);
    }
    mapping_free(m);
}
END_TEST

/* A file saved by a Windows editor starts with a UTF-8 byte order mark,
 * before a comment or before the first class. */
START_TEST(mapping_skips_a_byte_order_mark)
{
    struct hprof_mapping *m = parse("\xEF\xBB\xBF# compiler: R8\ncom.example.Foo -> a:\n");
    ck_assert_str_eq(mapping_class(m, S("a")), "com.example.Foo");
    mapping_free(m);
    m = parse("\xEF\xBB\xBF" "com.example.Foo -> a:\n    int count -> b\n");
    ck_assert_str_eq(mapping_class(m, S("a")), "com.example.Foo");
    ck_assert_str_eq(mapping_field(m, S("a"), S("b")), "count");
    mapping_free(m);
}
END_TEST

/* A chain of 50,000 lines under one obfuscated method name, one range and
 * one name each: 50,000 frames cost a binary search each (counted steps),
 * not a walk of the chain (2.5 billion steps). */
START_TEST(mapping_method_finds_a_frame_in_a_long_chain_in_few_steps)
{
    enum { N = 50000 };
    size_t cap = (size_t)N * 48, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "com.example.Big -> a:\n");
    for (unsigned i = 0; i < N; i++)
        len += (size_t)snprintf(text + len, cap - len, "    %u:%u:void m%u():%u -> a\n",
                                2 * i + 1, 2 * i + 2, i, i + 1);
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(mapping_parse(text, len, "chain.map", &m, &err), HPROF_OK);
    uint64_t steps = mapping_lookup_steps;
    for (unsigned i = 0; i < N; i++) {
        char want[16];
        int amb = -1;
        snprintf(want, sizeof want, "m%u", i);
        ck_assert_str_eq(mapping_method(m, S("a"), S("a"), (int32_t)(2 * i + 1 + i % 2), &amb),
                         want);
        ck_assert_int_eq(amb, 0);
    }
    steps = mapping_lookup_steps - steps;
    ck_assert_msg(steps < (uint64_t)N * 40, "%llu steps for %d frames", (unsigned long long)steps,
                  N);
    mapping_free(m);
    free(text);
}
END_TEST

/* The rule of mapping.h, the long way: every line of the chain looked at. */
struct chain_line {
    int lo, hi;
    int foreign;
    char name[8];
};

static const char *rule_by_walking(const struct chain_line *l, int n, int line, int *ambiguous)
{
    int one_name = 1, own = -1, any = -1, differ = 0;
    for (int i = 1; i < n; i++)
        one_name &= strcmp(l[i].name, l[0].name) == 0;
    *ambiguous = 0;
    if (one_name)
        return l[0].name;
    for (int i = 0; line > 0 && i < n; i++) {
        if (l[i].lo < 0 || line < l[i].lo || line > l[i].hi)
            continue;
        differ |= any >= 0 && strcmp(l[i].name, l[any].name) != 0;
        any = i;
        if (!l[i].foreign)
            own = i;
    }
    if (any >= 0) {
        *ambiguous = differ;
        return l[own >= 0 ? own : any].name;
    }
    *ambiguous = 1;
    for (int i = 0; i < n; i++)
        if (!l[i].foreign)
            return l[i].name;
    return l[0].name;
}

/* Chains of nested, overlapping and missing ranges, names repeated, lines
 * inlined from another class: mapping_method() answers as the walk does
 * for every line, in and around the ranges. */
START_TEST(mapping_method_answers_as_a_walk_of_the_chain_does)
{
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < 300; round++) {
        struct chain_line l[24];
        int n = 1 + (int)(x % 24);
        char text[4096];
        size_t len = (size_t)snprintf(text, sizeof text, "com.example.C -> a:\n");
        for (int i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            l[i].foreign = (int)(x >> 10 & 3) == 0;
            snprintf(l[i].name, sizeof l[i].name, "n%d", (int)(x >> 20 & 3));
            if ((x >> 30 & 3) == 0) {
                l[i].lo = l[i].hi = -1;
                len += (size_t)snprintf(text + len, sizeof text - len, "    void %s%s() -> b\n",
                                        l[i].foreign ? "o.U." : "", l[i].name);
            } else {
                l[i].lo = 1 + (int)(x >> 33 & 31);
                l[i].hi = l[i].lo + (int)(x >> 40 & 15);
                len += (size_t)snprintf(text + len, sizeof text - len, "    %d:%d:void %s%s():9 -> b\n",
                                        l[i].lo, l[i].hi, l[i].foreign ? "o.U." : "", l[i].name);
            }
        }
        struct hprof_mapping *m = parse(text);
        for (int line = -1; line < 52; line++) {
            int want_amb, amb;
            const char *want = rule_by_walking(l, n, line, &want_amb);
            const char *got = mapping_method(m, S("a"), S("b"), line, &amb);
            ck_assert_msg(strcmp(got, want) == 0 && amb == want_amb,
                          "round %d line %d: %s (%d), the walk says %s (%d)\n%s", round, line,
                          got, amb, want, want_amb, text);
        }
        mapping_free(m);
    }
}
END_TEST

/* The bound on what a mapping may cost: a file over it is refused before
 * it is read, a pipe once it has sent more, and a NUL byte (/dev/zero, a
 * dump given by mistake) at once. */
START_TEST(mapping_load_refuses_a_file_over_its_bound_and_a_nul_byte)
{
    static const char text[] = "com.example.Foo -> a:\n    int count -> b\n";
    struct hprof_mapping *m = NULL;
    struct hprof_error err = { 0 };
    char *path = tl_temp_file(text, strlen(text), ".map");
    ck_assert_int_eq(mapping_load_at_most(path, strlen(text), &m, &err), HPROF_OK);
    mapping_free(m);
    ck_assert_int_eq(mapping_load_at_most(path, strlen(text) - 1, &m, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err.message, "at most 40 bytes"));
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(write(fds[1], text, strlen(text)), (ssize_t)strlen(text));
    close(fds[1]);
    err = (struct hprof_error){ 0 };
    char fd_path[32];
    snprintf(fd_path, sizeof fd_path, "/dev/fd/%d", fds[0]);
    ck_assert_int_eq(mapping_load_at_most(fd_path, 10, &m, &err), HPROF_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "at most 10 bytes") != NULL, "%s", err.message);
    close(fds[0]);
    err = (struct hprof_error){ 0 };
    ck_assert_int_eq(mapping_load("/dev/zero", &m, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "/dev/zero: offset 0: a NUL byte"));
    unlink(path);
    free(path);
}
END_TEST

/* The map R8 wrote for ahat's test program (run only when
 * ../shared/fixtures exists): Bitmap and its DumpData are obfuscated. */
START_TEST(mapping_reads_the_map_of_the_art_fixture)
{
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    ck_assert_msg(mapping_load(ART_MAP, &m, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(mapping_n_classes(m), 26);
    ck_assert_str_eq(mapping_class(m, S("android.graphics.b")), "android.graphics.Bitmap");
    ck_assert_str_eq(mapping_class(m, S("android.graphics.a")), "android.graphics.Bitmap$DumpData");
    char out[64];
    ck_assert_uint_gt(mapping_class_name(m, S("android/graphics/a"), '.', out, sizeof out), 0);
    ck_assert_str_eq(out, "android/graphics/Bitmap$DumpData");
    ck_assert_str_eq(mapping_class(m, S("o")), "DumpedStuff$StackSmasher");
    ck_assert_str_eq(mapping_class(m, S("DumpedStuff")), "DumpedStuff");
    ck_assert_str_eq(mapping_field(m, S("android.graphics.b"), S("b")), "mWidth");
    ck_assert_str_eq(mapping_field(m, S("android.graphics.b"), S("d")), "dumpData");
    ck_assert_str_eq(mapping_field(m, S("DumpedStuff"), S("w")), "bitmapOne");
    ck_assert_str_eq(mapping_field(m, S("o"), S("a")), "child");
    ck_assert_str_eq(mapping_method(m, S("Main"), S("main"), 3, NULL), "main");
    ck_assert_str_eq(mapping_method(m, S("SuperDumpedStuff"), S("a"), 1, NULL),
                     "allocateObjectAtObfSuperSite");
    ck_assert_str_eq(mapping_method(m, S("DumpedStuff"), S("c"), 12, NULL),
                     "allocateObjectAtKnownSite");
    mapping_free(m);
}
END_TEST

static Suite *mapping_suite(void)
{
    Suite *s = suite_create("mapping");
    TCase *t = tcase_create("mapping");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, mapping_reads_classes_fields_and_methods_in_every_form);
    tcase_add_test(t, mapping_lookups_take_names_that_are_not_nul_terminated);
    tcase_add_test(t, mapping_finds_classes_in_both_spellings_and_as_arrays);
    tcase_add_test(t, mapping_skips_comments_metadata_blank_lines_and_carriage_returns);
    tcase_add_loop_test(t, mapping_rejects_a_malformed_line_naming_file_and_line, 0,
                        sizeof bad / sizeof bad[0]);
    tcase_add_test(t, mapping_rejects_members_before_a_class_and_a_class_named_twice);
    tcase_add_test(t, mapping_rejects_a_nul_byte);
    tcase_add_test(t, mapping_shows_a_malformed_line_with_its_control_characters_escaped);
    tcase_add_test(t, mapping_load_reports_a_file_it_cannot_read);
    tcase_add_test(t, mapping_method_picks_among_overloads_by_its_rule);
    tcase_add_test(t, mapping_finds_every_class_and_member_of_a_large_file);
    tcase_add_test(t, mapping_class_name_gives_a_class_without_package_the_dumps_form);
    tcase_add_test(t, mapping_skips_a_byte_order_mark);
    tcase_add_test(t, mapping_method_finds_a_frame_in_a_long_chain_in_few_steps);
    tcase_add_test(t, mapping_method_answers_as_a_walk_of_the_chain_does);
    tcase_add_test(t, mapping_load_refuses_a_file_over_its_bound_and_a_nul_byte);
    if (tl_have_shared_fixtures())
        tcase_add_test(t, mapping_reads_the_map_of_the_art_fixture);
    else
        printf("note: ../shared/fixtures absent, mapping_reads_the_map_of_the_art_fixture "
               "not run\n");
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(mapping_suite());
}
