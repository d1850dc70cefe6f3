"""What the command line prints: live agents, bench progress, tables (`render`) and
listings that stay greppable when piped (`listing`)."""
