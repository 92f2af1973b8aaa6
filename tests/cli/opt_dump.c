/*
 * Prints the command line's option table (programs/imgstat/options.c) for
 * tests/cli/docs_check.py, which holds the man page and the README to it: one
 * line per option of the statistics command and of normalize, tab-separated:
 * command (stats or normalize), long name, short name or -, whether it
 * takes a value (0/1), its value words or -, and its --help text with line
 * ends as \n.
 */
#include "options.h"

#include <stdio.h>

int main(void) {
  size_t n;
  const ist_opt *t = ist_opt_table(&n);
  for (size_t k = 0; k < n; k++) {
    const ist_opt *row = &t[k];
    if (!row->name)
      continue;
    const char *cmds[2] = {"stats", "normalize"};
    const unsigned masks[2] = {IST_CMD_STATS, IST_CMD_NORMALIZE};
    for (int c = 0; c < 2; c++) {
      if (!(row->commands & masks[c]))
        continue;
      printf("%s\t%s\t%s\t%d\t%s\t", cmds[c], row->name,
             row->short_name ? row->short_name : "-", row->takes_value,
             row->words ? row->words : "-");
      for (const char *h = row->help ? row->help : ""; *h; h++)
        if (*h == '\n')
          fputs("\\n", stdout);
        else
          putchar(*h);
      putchar('\n');
    }
  }
  return ferror(stdout) ? 1 : 0;
}
