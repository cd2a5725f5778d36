/*
 * mapping.h - a ProGuard/R8 mapping file (mapping.txt), read once and
 * looked up by obfuscated name: what --mapping=FILE reads.
 * Internal to libhprof: nothing here is exported under an hprof_ name.
 *
 * Call order:
 *   mapping_load(path, &m, err)            (or mapping_parse() of a buffer)
 *   mapping_class(m, ...) / mapping_class_name(m, ...)
 *   mapping_field(m, ...) / mapping_method(m, ...)   any number, any order
 *   mapping_free(m)
 * A loaded mapping is only read by the lookups: threads may share it.
 *
 * The format, as ProGuard and R8 write it:
 *
 *   # comment, or R8's metadata: # {"id":"com.android.tools.r8.mapping",...}
 *   com.example.Original -> a.b:           a class (inner ones: Outer$Inner)
 *       int count -> a                      a field of the class above
 *       void run(int) -> b                  a method, no line numbers
 *       1:3:void run(int):10:12 -> b        a method with line ranges
 *       4:4:void com.other.Util.x():7 -> b  code of another class inlined
 *
 * Lines are split on '\n' ('\r' before it ignored); blank lines and lines
 * whose first non-blank character is '#' are skipped.  Anything else that
 * is not one of the forms above is an error naming the file and line.
 *
 * Names are given as (pointer, length), as a dump's STRING records hold
 * them (not NUL-terminated).  A class name may be dotted (Android's
 * `a.b.C`) or use slashes (HotSpot's `a/b/C`): both find the same class.
 * A UTF-8 byte order mark before the first line is skipped.  Every
 * pointer returned points into the mapping and lives until mapping_free().
 * Memory: the file's text (held once), about 56 bytes per member line and
 * 32 per class, hash tables of twice those counts, and 16 bytes per run of
 * lines of the method chains whose lines have several names.
 */
#ifndef HPROF_MAPPING_H
#define HPROF_MAPPING_H

#include <stddef.h>
#include <stdint.h>

#include "hprof.h"

struct hprof_mapping;

/* mapping_load() :
 * Read and parse the mapping file at `path`.
 * @return HPROF_OK and *out, or HPROF_ERR_IO (cannot read it),
 * HPROF_ERR_FORMAT (a malformed line: "FILE:LINE: ..." in err) or
 * HPROF_ERR_NOMEM; *out is then NULL. */
int mapping_load(const char *path, struct hprof_mapping **out, struct hprof_error *err);

/* What mapping_load() reads at most: R8 mappings of large apps run to a
 * few hundred MB.  Its tables add about 80 bytes per member line. */
#define MAPPING_MAX_BYTES ((size_t)1 << 30)

/* mapping_load() with another bound (the tests' small ones). */
int mapping_load_at_most(const char *path, size_t max_bytes, struct hprof_mapping **out,
                         struct hprof_error *err);

/* Lookup steps taken on this thread (hash probes, chain and binary search
 * steps): the tests count them to prove the lookups do not grow with the
 * file. */
extern _Thread_local uint64_t mapping_lookup_steps;

/* mapping_parse() :
 * The same from `len` bytes of text, copied (the caller keeps `text`);
 * `name` stands for the file in messages. */
int mapping_parse(const char *text, size_t len, const char *name, struct hprof_mapping **out,
                  struct hprof_error *err);

/* Free the mapping and everything its lookups returned; NULL is a no-op. */
void mapping_free(struct hprof_mapping *m);

/* Classes and member lines the mapping holds. */
size_t mapping_n_classes(const struct hprof_mapping *m);
size_t mapping_n_members(const struct hprof_mapping *m);

/* mapping_class() :
 * The original name, dotted (`android.graphics.Bitmap`), of the class
 * whose obfuscated name is `obf` (dotted or slashed; not an array).
 * @return a NUL-terminated name, or NULL when the mapping does not know
 * the class (it then keeps its name). */
const char *mapping_class(const struct hprof_mapping *m, const char *obf, size_t len);

/* Could `name` be the obfuscated name of a field or method of some class?
 * A sure no (0), or a maybe (hash of every such name): a dump's reader
 * keeps the text of the names that may be, and no other. */
int mapping_maybe_member(const struct hprof_mapping *m, const char *name, size_t len);

/* mapping_class_name() :
 * A class name as a dump spells it, translated: dotted or slashed, and
 * arrays in either form (`a.b[][]`, `[[La/b;`; primitive arrays such as
 * `[I` or `int[]` are never mapped).  The result keeps the spelling of
 * `name` (slashes stay slashes, `[]` stays `[]`; a name without a package
 * gets `separator`, '/' in a HotSpot dump and '.' in an Android one, and
 * `[L...;` is HotSpot's form) and is written to `out`
 * (`cap` bytes, NUL-terminated when it fits).
 * @return the length of the translated name (without NUL; if >= cap, call
 * again with a larger buffer), or 0 when the class is not mapped. */
size_t mapping_class_name(const struct hprof_mapping *m, const char *name, size_t len,
                          char separator, char *out, size_t cap);

/* mapping_field() :
 * The original name of field `obf_field` of the class whose obfuscated
 * name is `obf_class` (dotted or slashed).
 * @return a NUL-terminated name, or NULL when the mapping does not list
 * it.  Only fields declared under the class are found: a field of a
 * superclass is looked up under the superclass, as a CLASS_DUMP lists
 * only its own fields. */
const char *mapping_field(const struct hprof_mapping *m, const char *obf_class, size_t class_len,
                          const char *obf_field, size_t field_len);

/* mapping_method() :
 * The original name of method `obf_method` of class `obf_class`, for a
 * STACK_FRAME at (obfuscated) line `line` (0 or less: unknown).
 *
 * Several original methods may share one obfuscated name: overloads
 * renamed alike, and R8's lines for code inlined into the method.  The
 * rule, in order:
 *   1. all candidates have one original name: that name;
 *   2. `line` > 0 falls in the obfuscated range (`a:b:`) of candidates:
 *      the last of those that names a method of this class (R8 lists the
 *      inlined methods first, then the method they were inlined into,
 *      which is the one the frame's class really has), else the last;
 *   3. otherwise the first candidate in file order that is a method of
 *      this class, else the first.
 * *ambiguous (if not NULL) is set to 1 when rule 2 or 3 had to choose
 * between different names, else 0.  Signatures are not compared: a dump's
 * are obfuscated too.
 * @return a NUL-terminated name, or NULL when the mapping has none. */
const char *mapping_method(const struct hprof_mapping *m, const char *obf_class, size_t class_len,
                           const char *obf_method, size_t method_len, int32_t line,
                           int *ambiguous);

#endif /* HPROF_MAPPING_H */
