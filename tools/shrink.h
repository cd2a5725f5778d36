/*
 * shrink.h - what hprof-shrink.c (one file) and batch.c (many at once)
 * share: the options of a run, the shrink of one file, and the names of
 * outputs.
 */
#ifndef HPROF_SHRINK_TOOL_H
#define HPROF_SHRINK_TOOL_H

#include <stdio.h>
#include <sys/stat.h>

#include "cli.h"

struct options {
    struct hprof_shrink_options shrink;
    int gzip_level;         /* 0: plain output */
    int zstd_level;         /* 0: not zstd (never both) */
    unsigned threads;       /* write-pass and gzip workers; 0: one per core */
    int force, quiet, stats, json;
    const char *in, *out;
    char *out_alloc;            /* OUT a directory: the file in it */
    /* Batch mode: -o DIR with several inputs, -r to walk directories. */
    const char *out_dir;
    int recursive;
    int batch;                  /* print one summary line per file */
    char **inputs;
    int n_inputs;
    const char *keep_rules[HPROF_REDACT_MAX_RULES];
    const char *mapping_path;   /* --mapping, loaded once for every input */
    int salvage;                /* --salvage: keep what a cut dump holds */
    int sync;                   /* --sync 1, --no-sync 0; -1: in batch mode only */
    /* --shard=K/N: this run is worker K (from 0) of N sharing one tree;
     * shard_count 0: no sharding. */
    unsigned shard_index, shard_count;
    struct cli_salvage salvaged;
    /* --one-pass 1, --multi-pass 2; 0: one pass for a stream (pipe, FIFO,
     * socket), several for a file */
    int passes;
};

/* Shrinks o->in into o->out; @return an exit code (messages printed). */
int shrink_file(struct options *o);

/* "{" and, under --shard, the shard's name: every line a shard prints
 * says which it is, so that the lines of N shards can be put together. */
void json_open(FILE *f, const struct options *o);

/* Batch mode (-o DIR): every input, several at once; @return the worst
 * exit code. */
int run_batch(struct options *o);

/* Whether `s` ends in `suffix`, in any case. */
int ends_with_nocase(const char *s, const char *suffix);

/* The length of ".gz" or ".zst" at the end of `name`, in any case; else 0. */
size_t compressed_suffix_len(const char *name);

/* The suffix the output's compression adds to a name: ".gz", ".zst" or "". */
const char *output_suffix(const struct options *o);

/* DIR/REL with REL's ".gz" or ".zst" dropped and `suffix` added; DIR's
 * trailing slashes are not doubled.  @return a new string, or NULL. */
char *output_name(const char *dir, const char *rel, const char *suffix);

/* Records with the output on `out_fd` (named `out`) the identity its
 * input `in` has now, by which a later batch run knows it up to date. */
void record_input_identity(int out_fd, const char *out, const struct stat *in);

#endif
