/*
 * mapping_private.h - the tables of a parsed mapping, shared by the parser
 * (mapping_parse.c) and the index and lookups (mapping.c).
 */
#ifndef HPROF_MAPPING_PRIVATE_H
#define HPROF_MAPPING_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "hprof.h"

#define NONE UINT32_MAX

struct map_class {
    const char *orig;           /* dotted, NUL-terminated in m->text */
    const char *obf;
    uint32_t obf_len;
    uint32_t line;              /* in the file, for messages */
};

struct map_member {
    uint32_t cls;               /* index into classes */
    uint8_t method;             /* 0 field, 1 method */
    uint8_t foreign;            /* the original is qualified: another class's
                                   code inlined here (R8) */
    uint8_t one_name;           /* chain head: every line of the chain has one name */
    uint32_t obf_len;
    const char *orig;           /* simple name */
    const char *obf;
    int32_t lo, hi;             /* obfuscated line range, -1 if none */
    uint32_t next;              /* the next line with the same key, or NONE */
    uint32_t fallback;          /* chain head: its first own line, else itself */
    uint32_t seg, n_seg;        /* chain head: its runs of lines in `segs` */
};

/* From line `start` up to the next run's start, the chain's lines whose
 * range covers it: the last of them and the last not inlined from another
 * class (NONE if none), and whether their names differ. */
struct line_run {
    uint32_t start;
    uint32_t any, own;
    uint32_t names_differ;
};

struct hprof_mapping {
    char *text;
    struct map_class *classes;
    size_t n_classes, cap_classes;
    struct map_member *members;
    size_t n_members, cap_members;
    uint32_t *class_slots;      /* index + 1; 0 = empty */
    size_t class_mask;
    uint32_t *member_slots;
    size_t member_mask;
    uint64_t *member_names;     /* hash | 1 of every obfuscated member name */
    size_t member_names_mask;
    struct line_run *segs;      /* the method chains' runs, chain after chain */
    size_t n_segs, cap_segs;
};

/* Indexes `m` once parsed: the hash tables and the method chains' answers.
 * `name` (the file's) is for messages. */
int mapping_index_all(struct hprof_mapping *m, const char *name, struct hprof_error *err);

/* `array` with room for more than `n` elements of `size` bytes (`*cap`
 * doubled as needed), or NULL (the array left as it was). */
void *mapping_grow(void *array, size_t *cap, size_t n, size_t size);

#endif
