from dygsched.cli import console

console()
