// CourierCLI module
