-- One login through sysbench's MySQL driver (libmariadb) and one query; prints
-- `ok CURRENT_USER()`. A refused login ends sysbench with its FATAL line.
-- usage: sysbench login.lua --mysql-host=... --mysql-user=... --events=1 --threads=1 run
function thread_init()
   con = sysbench.sql.driver():connect()
end

function event()
   print("ok " .. con:query_row("SELECT CURRENT_USER()"))
end

function thread_done()
   con:disconnect()
end
