/*
 * cli_private.h - between the parts of the tools' shared code (cli*.c),
 * not for the tools.
 */
#ifndef HPROF_CLI_PRIVATE_H
#define HPROF_CLI_PRIVATE_H

/* Removes every temporary output still open; async-signal-safe, for the
 * handlers of fatal signals. */
void cli_remove_temps(void);

#endif
