"""The live clew runtime (pykka actors) and its public Python surface."""
