/* placeholder until the shrinker lands */
#include <stdio.h>
#include "cli.h"
int main(int argc, char **argv)
{
    (void)argc;
    cli_init(argv[0]);
    cli_error("not implemented yet");
    return EXIT_USAGE;
}
