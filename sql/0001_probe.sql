select 2;
