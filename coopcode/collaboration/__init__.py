"""How two agents write one program: prompts, the scheduler that keeps many samples in
flight through the schemes' steps (`scheduler`, `attempts`), the code each wrote and the
program they make (`code`), the cooperation analysis (`cooperation`) and `solve`, one problem
end to end. The schemes and the rewards are plug-in packages of their own
(`coopcode.schemes`, `coopcode.rewards`)."""
