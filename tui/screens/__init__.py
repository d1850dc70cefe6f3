"""The app's screens: one per mode (agents, collaborate, train, bench), plus dialogs and help."""
